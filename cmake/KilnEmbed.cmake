# SPDX-License-Identifier: Apache-2.0
# kiln_embed_sql(OUT_C SYMBOL [DIALECT pg] FILES...): generates a C file holding every
# migration as {number, name, sql} in file order, so kilnd carries its schema with it.
# DIALECT pg maps the common files' SQLite type names to PostgreSQL's (KilnEmbedRun.cmake).
function(kiln_embed_sql out_c symbol)
  cmake_parse_arguments(_e "" "DIALECT" "" ${ARGN})
  set(_files ${_e_UNPARSED_ARGUMENTS})
  add_custom_command(
    OUTPUT ${out_c}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_c} -DSYMBOL=${symbol} "-DDIALECT=${_e_DIALECT}"
            "-DFILES=${_files}" -P ${CMAKE_SOURCE_DIR}/cmake/KilnEmbedRun.cmake
    DEPENDS ${_files} ${CMAKE_SOURCE_DIR}/cmake/KilnEmbedRun.cmake
    COMMENT "Embedding SQL migrations"
    VERBATIM)
endfunction()
