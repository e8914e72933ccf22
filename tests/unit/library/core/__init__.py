"""Unit tests of ``dynashard.core`` (one file per concern, as the package's modules)."""
