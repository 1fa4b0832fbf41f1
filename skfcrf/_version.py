"""The package version, the only place it is written.

``pyproject.toml`` reads it at build time (``[tool.setuptools.dynamic]``) without importing
the package, so this module must stay a plain assignment with no imports.
"""
__version__ = "0.1.0"
