# Architecture check: the process environment is read at the edge only. The
# apps (apps/), the launcher (src/launch/, a process manager that writes the
# ranks' environment) and comm::process_env (src/comm/env.cpp, the one
# snapshot the edge passes down) may read it; no other file under src/ or
# include/ may call getenv or touch environ.
# Run: cmake -DROOT=<source dir> -P environment_at_the_edge.cmake
cmake_policy(SET CMP0057 NEW)
file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/src/*.cpp ${ROOT}/src/*.h ${ROOT}/include/*.h)
set(allowed "src/comm/env.cpp")
set(offenders "")
foreach(f ${sources})
  if(f MATCHES "^src/launch/" OR f IN_LIST allowed)
    continue()
  endif()
  file(STRINGS ${ROOT}/${f} lines REGEX "getenv[ ]*\\(|[^_a-zA-Z]environ[^_a-zA-Z]")
  foreach(line ${lines})
    string(STRIP "${line}" line)
    if(NOT line MATCHES "^//")
      list(APPEND offenders "${f}: ${line}")
    endif()
  endforeach()
endforeach()
if(offenders)
  list(JOIN offenders "\n  " listed)
  message(FATAL_ERROR "the environment is read below the edge; read it in the app and pass it down "
                      "(train::RunEnvironment, comm::comm_options_from_env):\n  ${listed}")
endif()
message(STATUS "no getenv below the edge (${ROOT})")
