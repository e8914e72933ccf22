"""Unit tests of ``dynashard.cloudwatch`` (one file per concern, as the package's modules)."""
