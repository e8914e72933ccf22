"""Unit tests of ``dynashard.planning`` (one file per concern, as the package's modules)."""
