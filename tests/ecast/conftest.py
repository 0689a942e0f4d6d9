"""Fixtures shared by the dataset tests: the tiny generation model lives with the pipeline tests."""

from tests.ecast.pipeline.conftest import tiny_t5  # noqa: F401
