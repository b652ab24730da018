# SPDX-License-Identifier: Apache-2.0
# KILN_FUZZ=ON: the libFuzzer harnesses of tests/fuzz, under clang. Everything is compiled
# with coverage for the fuzzer and with ASan and UBSan (KILN_SANITIZE is not needed); the
# harnesses link libFuzzer's main. The tests are not built in such a tree.
if(KILN_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KILN_FUZZ needs clang (CC=clang), not ${CMAKE_C_COMPILER_ID}")
  endif()
  if(KILN_SANITIZE)
    message(FATAL_ERROR "KILN_FUZZ brings its own sanitizers: leave KILN_SANITIZE empty")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  set(KILN_TESTS OFF)
endif()
