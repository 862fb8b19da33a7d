# setuptools entry for `pip install --no-build-isolation ./python` (metadata in pyproject.toml).
# The package is pure Python; it loads libetkit-cli.so from $ETKIT_LIBRARY, from the package
# folder (the copy CMake stages in build/python), or the installed one (make install).
from setuptools import setup

setup()
