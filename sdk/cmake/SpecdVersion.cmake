# The specd release version, read by the top-level project and by the SDK when it is
# configured on its own (make install-sdk). The ABI version is separate: specd/version.h.
set(SPECD_VERSION 0.1.0)
