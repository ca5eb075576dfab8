# A stand-in LibTorch 2.15.0 for the configure-time range check (tests/cmake).
set(PACKAGE_VERSION "2.15.0")
