# install-pc.cmake - run by `cmake --install` (an install(CODE) in src/CMakeLists.txt): writes
# reign.pc for the prefix of this install, which --prefix may have changed since configuring.
#
# In: REIGN_PC_TEMPLATE (reign.pc.in configured but for @REIGN_PC_PREFIX@), REIGN_PC_UP (the
# way up from the .pc file's directory to the prefix, empty if the libdir is absolute),
# REIGN_PC_OUT (the file to write, then installed by an install(FILES)).
#
# Under /usr, the distribution's prefix, the prefix is written as it is: pkg-config then knows
# -I/usr/include and -L/usr/lib/... for system directories and leaves them out, and a sysroot
# (PKG_CONFIG_SYSROOT_DIR) is prefixed once.  Elsewhere it is relative to the file itself
# (${pcfiledir}), so that a tree moved after installing still works, as its programs do.
file(READ "${REIGN_PC_TEMPLATE}" pc)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR REIGN_PC_UP STREQUAL "")
  set(prefix "${CMAKE_INSTALL_PREFIX}")
else()
  set(prefix "\${pcfiledir}/${REIGN_PC_UP}")
endif()
string(REPLACE "@REIGN_PC_PREFIX@" "${prefix}" pc "${pc}")
file(WRITE "${REIGN_PC_OUT}" "${pc}")
