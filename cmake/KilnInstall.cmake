# SPDX-License-Identifier: Apache-2.0
# install() rules (GNUInstallDirs) and the Debian packages (CPack DEB): kiln-server,
# kiln-cli, kiln-agent, one install component each.
#   cmake --install build --prefix /tmp/x      a complete tree under /tmp/x (a build not
#                                              configured for /usr; for one that is,
#                                              DESTDIR=/tmp/x cmake --install build)
#   cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build build && (cd build && cpack -G DEB)
include(GNUInstallDirs)

# A /usr install is the system's: /etc, /var and systemd's unit folder, as a package has
# them. Any other prefix keeps everything under it.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_etc /etc)
  find_package(PkgConfig QUIET)
  pkg_get_variable(_units systemd systemdsystemunitdir)
  if(NOT _units)
    set(_units /lib/systemd/system)
  endif()
else()
  set(_etc ${CMAKE_INSTALL_SYSCONFDIR})
  set(_units lib/systemd/system)
endif()
# -DKILN_INSTALL_ETC=, -DKILN_SYSTEMD_UNIT_DIR= override them; otherwise they follow the prefix
# at every configure. A /usr build has absolute /etc paths: stage it with DESTDIR, not --prefix.
if(NOT KILN_INSTALL_ETC)
  set(KILN_INSTALL_ETC ${_etc})
endif()
if(NOT KILN_SYSTEMD_UNIT_DIR)
  set(KILN_SYSTEMD_UNIT_DIR ${_units})
endif()
set(KILN_PACKAGE_MAINTAINER "kiln developers <kiln@kiln.invalid>" CACHE STRING
    "The Maintainer of the Debian packages")
set(KILN_DEB_RELEASE 1 CACHE STRING "The Debian revision of the packages")

set(_doc ${CMAKE_INSTALL_DATADIR}/doc)
set(_deb ${CMAKE_SOURCE_DIR}/deploy/debian)

# changelog.Debian.gz and copyright: every package has its own in /usr/share/doc/PACKAGE.
set(KILN_DEB_VERSION ${PROJECT_VERSION}-${KILN_DEB_RELEASE})
configure_file(${_deb}/changelog.in ${CMAKE_BINARY_DIR}/debian/changelog.Debian @ONLY)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz
  COMMAND gzip -9n -c ${CMAKE_BINARY_DIR}/debian/changelog.Debian >
          ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz
  DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog.Debian)
add_custom_target(kiln-changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz)

foreach(_c server cli agent)
  install(FILES ${_deb}/copyright ${CMAKE_BINARY_DIR}/debian/changelog.Debian.gz
          DESTINATION ${_doc}/kiln-${_c} COMPONENT ${_c})
endforeach()

# kiln-server: kilnd, its unit, its configuration (a conffile) and the full example.
install(TARGETS kilnd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
install(FILES deploy/systemd/kilnd.service DESTINATION ${KILN_SYSTEMD_UNIT_DIR} COMPONENT server)
install(FILES deploy/kilnd.conf DESTINATION ${KILN_INSTALL_ETC}/kiln COMPONENT server)
install(FILES deploy/kilnd.conf.example DESTINATION ${_doc}/kiln-server/examples
        COMPONENT server)
# The Prometheus scrape config, alert rules (with their promtool tests) and Grafana dashboard.
install(FILES deploy/prometheus/prometheus.yml deploy/prometheus/kiln-rules.yml
              deploy/prometheus/kiln-rules.test.yml
        DESTINATION ${_doc}/kiln-server/examples/prometheus COMPONENT server)
install(FILES deploy/grafana/kiln-dashboard.json
        DESTINATION ${_doc}/kiln-server/examples/grafana COMPONENT server)

# kiln-cli: kiln, the example cli.conf, the completion.
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(FILES deploy/cli.conf.example DESTINATION ${_doc}/kiln-cli/examples COMPONENT cli)

# kiln-agent: the agent, its unit and /etc/default/kiln-agent (a conffile), the rollout files.
install(TARGETS kiln-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
install(FILES deploy/systemd/kiln-agent.service DESTINATION ${KILN_SYSTEMD_UNIT_DIR}
        COMPONENT agent)
install(FILES deploy/default/kiln-agent DESTINATION ${KILN_INSTALL_ETC}/default COMPONENT agent)
install(FILES deploy/cloud-init-agent.yaml DESTINATION ${_doc}/kiln-agent/examples
        COMPONENT agent)

if(KILN_DOCS)
  set(_man ${CMAKE_INSTALL_MANDIR})
  install(FILES ${KILN_MAN_DIR}/kilnd.8.gz DESTINATION ${_man}/man8 COMPONENT server)
  install(FILES ${KILN_MAN_DIR}/kilnd.conf.5.gz DESTINATION ${_man}/man5 COMPONENT server)
  install(FILES ${KILN_MAN_DIR}/kiln.1.gz DESTINATION ${_man}/man1 COMPONENT cli)
  install(FILES ${KILN_MAN_DIR}/kiln-agent.8.gz DESTINATION ${_man}/man8 COMPONENT agent)
  install(FILES ${KILN_COMPLETION_DIR}/kiln
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT cli)
  install(FILES ${KILN_COMPLETION_DIR}/_kiln
          DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT cli)
endif()

# The packages. Dependencies come from dpkg-shlibdeps over the binaries, plus what the
# maintainer scripts run (adduser; deb-systemd-invoke is in the essential init-system-helpers).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${KILN_PACKAGE_MAINTAINER})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL server cli agent)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${KILN_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${KILN_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# kiln_deb_control(COMP comp CONFFILE): the package's conffiles and its maintainer scripts
# (deploy/debian/kiln-COMP.{postinst,prerm,postrm}) into its control archive.
function(kiln_deb_control upper comp conffile)
  set(_dir ${CMAKE_BINARY_DIR}/debian/${comp})
  file(WRITE ${_dir}/conffiles "${conffile}\n")
  set(_extra ${_dir}/conffiles)
  foreach(_script postinst prerm postrm)
    configure_file(${_deb}/kiln-${comp}.${_script} ${_dir}/${_script} COPYONLY)
    list(APPEND _extra ${_dir}/${_script})
  endforeach()
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA ${_extra} PARENT_SCOPE)
endfunction()

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME kiln-server)
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "adduser")
set(CPACK_COMPONENT_SERVER_DESCRIPTION
    "out-of-band fleet manager for GPU clusters: the server\n\
kilnd talks Redfish and IPMI to the nodes' BMCs, receives the reports of\n\
kiln-agent on every node, keeps the inventory and the history in SQLite\n\
(or PostgreSQL) and serves the REST API the kiln command drives: power\n\
actions confirmed by reading the state back, hung node detection,\n\
reinstalls, audits of driver and CUDA versions.")
kiln_deb_control(SERVER server ${KILN_INSTALL_ETC}/kiln/kilnd.conf)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME kiln-cli)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "out-of-band fleet manager for GPU clusters: the command line\n\
kiln drives kilnd: node inventory, live power state and power actions,\n\
sensors, BMC event logs, serial consoles, reinstalls, the driver and CUDA\n\
audit and the overnight report. With man pages and bash and zsh\n\
completion.")

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME kiln-agent)
set(CPACK_COMPONENT_AGENT_DESCRIPTION
    "out-of-band fleet manager for GPU clusters: the node agent\n\
kiln-agent reports a node's GPUs (through NVML), NVIDIA driver and CUDA\n\
versions, host facts and Xid errors to kilnd. It enrolls with a fleet\n\
enrollment token and keeps unsent reports in a spool.")
kiln_deb_control(AGENT agent ${KILN_INSTALL_ETC}/default/kiln-agent)

# A package of a build configured for another prefix would put files in /usr/etc.
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/KilnCPackCheck.cmake)
file(WRITE ${CPACK_PROJECT_CONFIG_FILE}
     "if(NOT \"${CMAKE_INSTALL_PREFIX}\" STREQUAL \"/usr\")\n"
     "  message(FATAL_ERROR \"kiln's packages need a build configured with "
     "-DCMAKE_INSTALL_PREFIX=/usr (this one has ${CMAKE_INSTALL_PREFIX})\")\n"
     "endif()\n")
include(CPack)
