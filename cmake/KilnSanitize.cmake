# SPDX-License-Identifier: Apache-2.0
# Sanitizers: KILN_SANITIZE=address,undefined (deploy/test.sh turns them on).
if(KILN_SANITIZE)
  string(REPLACE "," ";" _kiln_san_list "${KILN_SANITIZE}")
  foreach(_san IN LISTS _kiln_san_list)
    if(NOT _san MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "KILN_SANITIZE: unknown sanitizer '${_san}'")
    endif()
  endforeach()
  add_compile_options(-fsanitize=${KILN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${KILN_SANITIZE})
endif()
