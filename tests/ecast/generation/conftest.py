from tests.ecast.pipeline.conftest import tiny_t5  # noqa: F401
