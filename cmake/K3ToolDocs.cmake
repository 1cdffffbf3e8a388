# Writes a tool's man page and bash completion from its own --help, so
# neither can drift from the flags the tool really takes. Run at build time:
#   cmake -DTOOL=<built executable> -DNAME=<tool name> -DVERSION=<k3 version>
#         -DMAN_OUT=<file.1> -DCOMPLETION_OUT=<file> -P K3ToolDocs.cmake
foreach(var TOOL NAME VERSION MAN_OUT COMPLETION_OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "K3ToolDocs.cmake: -D${var}=... is required")
  endif()
endforeach()

execute_process(COMMAND ${TOOL} --help
  OUTPUT_VARIABLE help ERROR_VARIABLE help_err RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "${NAME} --help exited ${status} with no help on stdout: ${help_err}")
endif()

# NAME line: the help's first sentence, without a leading "<tool> ...:" usage part.
string(REGEX MATCH "^[^\n]*(\n[^\n]+)*" summary "${help}")
string(REGEX REPLACE "\nUsage:.*" "" summary "${summary}")
string(REPLACE "\n" " " summary "${summary}")
if(summary MATCHES "^${NAME}[^:]*: (.*)$")
  set(summary "${CMAKE_MATCH_1}")
endif()
string(REGEX REPLACE "([.;]) .*" "\\1" summary "${summary}")
string(REGEX REPLACE "[.;]$" "" summary "${summary}")

# The page is shown as written (.nf), so lines are wrapped here at 80
# columns: an option's description goes on under its column (30, where
# CLI11 aligns it), other text under its own indent.
string(REPLACE ";" "@K3SEMI@" lines "${help}")
string(REPLACE "\n" ";" lines "${lines}")
set(help_wrapped "")
foreach(line IN LISTS lines)
  string(REPLACE "@K3SEMI@" ";" line "${line}")
  set(indent "")
  if(line MATCHES "^( +)")
    set(indent "${CMAKE_MATCH_1}")
  endif()
  string(LENGTH "${line}" len)
  if(len GREATER 31 AND line MATCHES "^  [^ ]")
    string(SUBSTRING "${line}" 28 2 gap)
    if(gap STREQUAL "  ")
      set(indent "                              ")  # a flag and its description
    endif()
  endif()
  string(LENGTH "${indent}" indent_len)
  string(LENGTH "${line}" len)
  while(len GREATER 80)
    string(SUBSTRING "${line}" 0 81 head)
    string(FIND "${head}" " " cut REVERSE)
    if(cut LESS_EQUAL indent_len)
      break()  # one word longer than the line: left as it is
    endif()
    string(SUBSTRING "${line}" 0 ${cut} first)
    math(EXPR rest_start "${cut} + 1")
    string(SUBSTRING "${line}" ${rest_start} -1 rest)
    string(APPEND help_wrapped "${first}\n")
    set(line "${indent}${rest}")
    string(LENGTH "${line}" len)
  endwhile()
  string(APPEND help_wrapped "${line}\n")
endforeach()

# roff: a backslash is \e, a hyphen \- (so flags copy as ASCII), and a line
# starting with . or ' must not be read as a request.
set(body "${help_wrapped}")
string(REPLACE "\\" "\\e" body "${body}")
string(REPLACE "-" "\\-" body "${body}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" body "${body}")
string(REPLACE "\\" "\\e" summary "${summary}")
string(REPLACE "-" "\\-" summary "${summary}")
string(REPLACE "-" "\\-" roff_name "${NAME}")
string(TOUPPER "${NAME}" title)

file(WRITE ${MAN_OUT}
  ".\\\" Generated from `${NAME} --help` at build time; edit the tool, not this file.\n"
  ".TH ${title} 1 \"\" \"k3 ${VERSION}\" \"k3 manual\"\n"
  ".SH NAME\n${roff_name} \\- ${summary}\n"
  ".SH DESCRIPTION\n.nf\n${body}\n.fi\n"
  ".SH SEE ALSO\nThe k3 README (Run the real Kimi-K3) and the other k3 tools' pages.\n")

# Completion: every long flag the help lists as an option; the values of a
# flag that takes one of a fixed set (CLI11's "TEXT:{a,b}", or the preset
# names "Memory preset: a, b, ... or c"); subcommands, each with the flags
# of its own --help. Anything else completes as a file name.
function(k3_long_flags help out)
  string(REGEX MATCHALL "\n  (-[a-zA-Z],)?--[a-zA-Z][a-zA-Z0-9-]*" f "${help}")
  list(TRANSFORM f REPLACE "^\n  (-[a-zA-Z],)?" "")
  list(REMOVE_DUPLICATES f)
  list(SORT f)
  string(REPLACE ";" " " f "${f}")
  set(${out} "${f}" PARENT_SCOPE)
endfunction()
# Case lines "--flag) words" for the flags of `help` with a fixed set of values.
function(k3_value_cases help out)
  set(cases "")
  string(REGEX MATCHALL "\n  --[a-zA-Z0-9-]+ [A-Z]+:{[^}\n]*}" sets "${help}")
  foreach(m IN LISTS sets)
    string(REGEX REPLACE "^\n  (--[a-zA-Z0-9-]+) [A-Z]+:{([^}]*)}$" "\\1;\\2" pair "${m}")
    list(GET pair 0 flag)
    list(GET pair 1 words)
    string(REPLACE "," " " words "${words}")
    string(APPEND cases "    ${flag}) COMPREPLY=($(compgen -W \"${words}\" -- \"$cur\")); return ;;\n")
  endforeach()
  if(help MATCHES "\n  --preset [A-Z]+ +Memory preset: ([a-z, ]+) or ([a-z]+)")
    string(REPLACE "," "" words "${CMAKE_MATCH_1} ${CMAKE_MATCH_2}")
    string(APPEND cases "    --preset) COMPREPLY=($(compgen -W \"${words}\" -- \"$cur\")); return ;;\n")
  endif()
  set(${out} "${cases}" PARENT_SCOPE)
endfunction()

k3_long_flags("${help}" flags)
k3_value_cases("${help}" cases)
set(subs "")
set(sub_cases "")
if(help MATCHES "\nSubcommands:\n(  [a-z][^\n]*\n)+")
  string(REGEX MATCHALL "\n  [a-z][a-z0-9-]*" subs "${CMAKE_MATCH_0}")
  list(TRANSFORM subs REPLACE "^\n  " "")
  foreach(sub IN LISTS subs)
    execute_process(COMMAND ${TOOL} ${sub} --help OUTPUT_VARIABLE sub_help RESULT_VARIABLE st ERROR_QUIET)
    k3_long_flags("${sub_help}" sub_flags)
    k3_value_cases("${sub_help}" sub_values)
    string(APPEND cases "${sub_values}")
    string(APPEND sub_cases "    ${sub}) words=\"${sub_flags}\" ;;\n")
  endforeach()
  string(REPLACE ";" " " subs "${subs}")
endif()
string(REPLACE "-" "_" fn "${NAME}")
file(WRITE ${COMPLETION_OUT}
  "# bash completion for ${NAME}, generated from `${NAME} --help` at build time.\n"
  "_${fn}() {\n"
  "  local cur=\"\${COMP_WORDS[COMP_CWORD]}\" prev=\"\${COMP_WORDS[COMP_CWORD-1]}\" words=\"${flags}\"\n"
  "  COMPREPLY=()\n"
  "  case \"\$prev\" in\n${cases}  esac\n"
  "  if [ -n \"${subs}\" ]; then\n"
  "    if [ \"\$COMP_CWORD\" -eq 1 ] && [[ \"\$cur\" != -* ]]; then\n"
  "      COMPREPLY=(\$(compgen -W \"${subs}\" -- \"\$cur\")); return\n"
  "    fi\n"
  "    case \"\${COMP_WORDS[1]}\" in\n${sub_cases}    esac\n"
  "  fi\n"
  "  if [[ \"\$cur\" == -* ]]; then\n"
  "    COMPREPLY=(\$(compgen -W \"\$words\" -- \"\$cur\"))\n"
  "  fi\n"
  "}\n"
  "complete -o default -o bashdefault -F _${fn} ${NAME}\n")
