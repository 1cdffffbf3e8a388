# What `cmake --install` puts under the prefix:
#   bin/k3-*                                 the tools
#   share/man/man1/k3-*.1                    man pages made from each tool's --help
#   share/bash-completion/completions/k3-*   completions made from the same help
#   lib/libk3.a                              the library
#   include/k3/<area>/*.h                    its public headers (below)
#   lib/cmake/k3/                            find_package(k3) -> target k3::k3
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(K3_DOCS_DIR ${CMAKE_BINARY_DIR}/share)

function(k3_install_tool tool)
  set(man ${K3_DOCS_DIR}/man/man1/${tool}.1)
  set(completion ${K3_DOCS_DIR}/bash-completion/completions/${tool})
  add_custom_command(OUTPUT ${man} ${completion}
    COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:${tool}> -DNAME=${tool}
            -DVERSION=${PROJECT_VERSION} -DMAN_OUT=${man} -DCOMPLETION_OUT=${completion}
            -P ${PROJECT_SOURCE_DIR}/cmake/K3ToolDocs.cmake
    DEPENDS ${tool} ${PROJECT_SOURCE_DIR}/cmake/K3ToolDocs.cmake
    COMMENT "Man page and completion from ${tool} --help")
  add_custom_target(${tool}-docs ALL DEPENDS ${man} ${completion})
  install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${completion} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
endfunction()

# The public headers: what a program embedding k3 includes (the model and
# its sessions, the error type, the tokenizer) and every header they include,
# followed to the end; the other headers are private and not installed.
# install_test builds and runs a program against this set alone.
set(K3_PUBLIC_HEADER_ROOTS engine/model.h engine/session.h common/error.h tokenizer/tokenizer.h)

# k3_public_headers(OUT): the roots and their includes, as lib/ paths, sorted.
function(k3_public_headers out)
  set(todo ${K3_PUBLIC_HEADER_ROOTS})
  set(found)
  while(todo)
    list(POP_FRONT todo header)
    if(header IN_LIST found)
      continue()
    endif()
    list(APPEND found ${header})
    set(path ${PROJECT_SOURCE_DIR}/lib/${header})
    # An include edited in a public header changes the set: configure again.
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
    file(STRINGS ${path} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" included "${line}")
      if(EXISTS ${PROJECT_SOURCE_DIR}/lib/${included})
        list(APPEND todo ${included})
      endif()
    endforeach()
  endwhile()
  list(SORT found)
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(k3_install_library)
  set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/k3)
  install(TARGETS k3 EXPORT k3Targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  k3_public_headers(headers)
  foreach(header IN LISTS headers)
    get_filename_component(area ${header} DIRECTORY)
    install(FILES ${PROJECT_SOURCE_DIR}/lib/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/k3/${area})
  endforeach()
  install(EXPORT k3Targets NAMESPACE k3:: DESTINATION ${config_dir})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/k3Config.cmake.in
    ${CMAKE_BINARY_DIR}/k3Config.cmake INSTALL_DESTINATION ${config_dir})
  write_basic_package_version_file(${CMAKE_BINARY_DIR}/k3ConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_BINARY_DIR}/k3Config.cmake ${CMAKE_BINARY_DIR}/k3ConfigVersion.cmake
          DESTINATION ${config_dir})
endfunction()
