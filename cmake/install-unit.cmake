# install-unit.cmake - run by `cmake --install` (an install(CODE) in src/reignd/CMakeLists.txt):
# installs reignd.service with ExecStart= in the sbin directory of this install's prefix, which
# --prefix may have changed since configuring.
#
# In: REIGN_UNIT_SOURCE (contrib/systemd/reignd.service), REIGN_UNIT_SBINDIR (relative to the
# prefix, or absolute), REIGN_UNIT_DIR (where to install it: a directory given by the builder,
# else empty), REIGN_UNIT_SYSTEMDDIR (systemd's own unit directory, from systemd.pc; may be
# empty), REIGN_UNIT_BUILD (a scratch file in the build tree).
#
# The directory: the one given; else systemd's own when installing to /usr, the distribution's
# prefix; else PREFIX/lib/systemd/system, inside the prefix, so that `cmake --install --prefix
# DIR` never writes outside DIR (the operator links or copies the unit from there).
if(IS_ABSOLUTE "${REIGN_UNIT_SBINDIR}")
  set(sbindir "${REIGN_UNIT_SBINDIR}")
else()
  set(sbindir "${CMAKE_INSTALL_PREFIX}/${REIGN_UNIT_SBINDIR}")
endif()
if(REIGN_UNIT_DIR)
  set(dir "${REIGN_UNIT_DIR}")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND REIGN_UNIT_SYSTEMDDIR)
  set(dir "${REIGN_UNIT_SYSTEMDDIR}")
else()
  set(dir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
file(READ "${REIGN_UNIT_SOURCE}" unit)
string(REPLACE "ExecStart=/usr/sbin/reignd" "ExecStart=${sbindir}/reignd" unit "${unit}")
get_filename_component(scratch "${REIGN_UNIT_BUILD}" DIRECTORY)
file(MAKE_DIRECTORY "${scratch}")
file(WRITE "${REIGN_UNIT_BUILD}" "${unit}")
# file(INSTALL) honours DESTDIR and lists the file in install_manifest.txt.
file(INSTALL DESTINATION "${dir}" TYPE FILE FILES "${REIGN_UNIT_BUILD}")
