"""pyrdk._rdkafka, the cffi module build_ffi.py generates: librdkafka's functions (``lib``) and
cffi's FFI instance (``ffi``). Only pyrdk._ffi and pyrdk.rd use them."""
from typing import Any

ffi: Any
lib: Any
