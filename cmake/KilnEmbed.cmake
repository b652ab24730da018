# kiln_embed_sql(OUT_C SYMBOL FILES...): generates a C file holding every migration as
# {number, name, sql} in file order, so kilnd carries its schema with it.
function(kiln_embed_sql out_c symbol)
  set(_files ${ARGN})
  add_custom_command(
    OUTPUT ${out_c}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_c} -DSYMBOL=${symbol} "-DFILES=${_files}"
            -P ${CMAKE_SOURCE_DIR}/cmake/KilnEmbedRun.cmake
    DEPENDS ${_files} ${CMAKE_SOURCE_DIR}/cmake/KilnEmbedRun.cmake
    COMMENT "Embedding SQL migrations"
    VERBATIM)
endfunction()
