"""The low level: one module per librdkafka object, each owning its C pointers.

Only this package (and ``pyrdk._ffi``) touches ``ffi`` and ``lib``; the pykafka-named
modules above it see Python values only.
"""
