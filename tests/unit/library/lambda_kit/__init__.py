"""Unit tests of ``dynashard.lambda_kit`` (one file per concern, as the package's modules)."""
