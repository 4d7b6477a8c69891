"""Package layout that pyproject.toml alone cannot express.

The generated protobuf modules live in generated/ (the output of `make protos`, never
edited by hand) but are imported as ``neuro_san.api.grpc``, the module path upstream
neuro-san uses. Listing them here, with their folder, makes both regular and editable
installs map them without any path hacks.

Discovery is by namespace: the folders that hold only data (the bundled networks in
``neuro_san/registries``, the example coded tools, the playground's ``static/``) are
importable folders too, and setuptools warns about every such folder left out of
``packages``. Listing them as (namespace) packages ships their files through
``package-data`` with nothing to warn about; ``__pycache__`` folders are not packages.

An editable install uses setuptools' import finder, which then reminds that "folders in
your working directory with the same name as your package may take precedence". The
cause is the flat layout (several top-level packages at the root, no ``src/`` folder):
setuptools 84 picks the finder unless ``package_dir`` is just ``{"": dir}`` (src layout),
so the note comes even without the ``neuro_san.api`` mapping. (A ``neuro_san/api``
symlink to generated/ plus ``package_dir={"": "."}`` would get a plain ``.pth`` instead,
but ruff and mypy then take the generated package for our own sources: import order
changes in 17 files and mypy fails on the skipped stubs.) Here those folders *are*
the package's sources (the finder maps to them), so the note cannot apply; it alone is
filtered, by its text.
"""

import warnings

from setuptools import find_namespace_packages, setup

warnings.filterwarnings("ignore", message=r"\s*Editable installation\.")

GENERATED = {
    "neuro_san.api": "generated/neuro_san/api",
    "neuro_san.api.grpc": "generated/neuro_san/api/grpc",
}

setup(
    packages=find_namespace_packages(
        include=["neuro_san", "neuro_san.*", "gateway", "gateway.*"],
        exclude=["*.__pycache__"],
    ) + list(GENERATED),
    package_dir=GENERATED,
)
