"""Unit tests of ``dynashard.dynamodb`` (one file per concern, as the package's modules)."""
