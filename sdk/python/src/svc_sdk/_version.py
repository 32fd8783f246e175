"""The SDK's version, reported to the engine in `engine::workers::register`."""

__version__ = "0.1.0"
