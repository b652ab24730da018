# SPDX-License-Identifier: Apache-2.0
# Warning flags for every kiln target; -Werror when KILN_WERROR is on (CI, deploy/test.sh).
set(KILN_WARNING_FLAGS
  -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wformat=2 -Wno-format-nonliteral -Wvla -Wpointer-arith)
add_compile_options(${KILN_WARNING_FLAGS})
if(KILN_WERROR)
  add_compile_options(-Werror)
endif()
