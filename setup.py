"""Package layout that pyproject.toml alone cannot express.

The generated protobuf modules live in generated/ (the output of `make protos`, never
edited by hand) but are imported as ``neuro_san.api.grpc``, the module path upstream
neuro-san uses. Listing them here, with their folder, makes both regular and editable
installs map them without any path hacks.
"""

from setuptools import find_packages, setup

GENERATED = {
    "neuro_san.api": "generated/neuro_san/api",
    "neuro_san.api.grpc": "generated/neuro_san/api/grpc",
}

setup(
    packages=find_packages(include=["neuro_san", "neuro_san.*", "gateway", "gateway.*", "playground", "playground.*"]) + list(GENERATED),
    package_dir=GENERATED,
)
