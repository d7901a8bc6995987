"""numpydoc validation settings shared by ``docs/conf.py`` and ``tests/test_docstrings.py``."""

#: PR01: a parameter not documented; PR02: a documented parameter that does not exist (prose or a
#: directive parsed as a parameter); RT01: no Returns section; GL08: no docstring; SS03: summary
#: without a final period.
CHECKS = {"PR01", "PR02", "RT01", "GL08", "SS03"}

#: Objects not validated, as regular expressions on the full name:
#: private names (documented for developers, not rendered on the site), and the methods that
#: estimators inherit from scikit-learn (``set_output`` and the metadata-routing ``set_*_request``),
#: whose docstrings are scikit-learn's.
EXCLUDE = [
    r"\._[^.]*$",
    r"\.set_output$",
    r"\.set_[a-z_]+_request$",
]
