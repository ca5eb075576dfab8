# A stand-in LibTorch 1.13.1 for the configure-time range check (tests/cmake).
set(PACKAGE_VERSION "1.13.1")
