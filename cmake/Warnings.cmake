# One interface target carries the project's warning and sanitizer flags; every
# project target links it, third-party targets never see it.
add_library(memcg_warnings INTERFACE)
add_library(memcg::warnings ALIAS memcg_warnings)
target_compile_options(memcg_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow
  -Wnon-virtual-dtor -Wold-style-cast -Wnull-dereference -Wimplicit-fallthrough)
if(MEMCG_WERROR)
  target_compile_options(memcg_warnings INTERFACE -Werror)
endif()
if(MEMCG_SANITIZE STREQUAL "thread")
  target_compile_options(memcg_warnings INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(memcg_warnings INTERFACE -fsanitize=thread)
elseif(MEMCG_SANITIZE)  # ON or address
  target_compile_options(memcg_warnings INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(memcg_warnings INTERFACE -fsanitize=address,undefined)
endif()
if(MEMCG_FUZZ)
  # Every project object is instrumented for coverage and checked by ASan+UBSan;
  # only the fuzz targets link libFuzzer's main (tests/fuzz).
  target_compile_options(memcg_warnings INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(memcg_warnings INTERFACE -fsanitize=address,undefined)
endif()
