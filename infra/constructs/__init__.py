"""One CDK construct per concern, composed by :mod:`infra.stack`."""
