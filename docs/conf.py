"""Sphinx configuration for the skfcrf documentation.

Build with warnings as errors::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""
import os
import sys

# document the source tree (the compiled kernels must be built in place:
# ``python setup.py build_ext --inplace``), not an older installed copy
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import skfcrf  # noqa: E402

project = "skfcrf"
author = "the skfcrf developers"
copyright = "2026, the skfcrf developers"
version = skfcrf.__version__
release = skfcrf.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
language = "en"

# -- autodoc / autosummary / numpydoc -------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

# the package's docstrings cross-reference each other with the default role
default_role = "py:obj"
nitpicky = False

intersphinx_mapping = {}  # offline builds: no inventories are fetched

# -- HTML ------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"skfcrf {release}"
html_static_path = []
html_theme_options = {
    "description": "Factorial CRFs for scikit-learn",
    "fixed_sidebar": True,
}
