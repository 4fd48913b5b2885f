"""The package's version, a leaf module: the CLI, the renderers and the package root read it
without importing anything else. Versioning policy: CHANGELOG.md."""

__version__ = "0.1.0"
