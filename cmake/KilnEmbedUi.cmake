# SPDX-License-Identifier: Apache-2.0
# kiln_embed_ui(OUT_C NAME=FILE...): generates a C file holding each dashboard asset as
# {name, bytes, length}, so kilnd serves its web page with no file to install beside it.
function(kiln_embed_ui out_c)
  set(_pairs ${ARGN})
  set(_files "")
  foreach(_p IN LISTS _pairs)
    string(REGEX REPLACE "^[^=]*=" "" _f "${_p}")
    list(APPEND _files ${_f})
  endforeach()
  string(REPLACE ";" "|" _arg "${_pairs}")
  add_custom_command(
    OUTPUT ${out_c}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_c} "-DPAIRS=${_arg}"
            -P ${CMAKE_SOURCE_DIR}/cmake/KilnEmbedUiRun.cmake
    DEPENDS ${_files} ${CMAKE_SOURCE_DIR}/cmake/KilnEmbedUiRun.cmake
    COMMENT "Embedding the dashboard's assets"
    VERBATIM)
endfunction()
