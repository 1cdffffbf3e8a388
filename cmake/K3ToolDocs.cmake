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

# roff: a backslash is \e, a hyphen \- (so flags copy as ASCII), and a line
# starting with . or ' must not be read as a request.
set(body "${help}")
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

# Completion: every long flag the help lists as an option; anything else
# completes as a file name (MODEL_DIR, --ids FILE, ...).
string(REGEX MATCHALL "\n  (-[a-zA-Z],)?--[a-zA-Z][a-zA-Z0-9-]*" flags "${help}")
list(TRANSFORM flags REPLACE "^\n  (-[a-zA-Z],)?" "")
list(REMOVE_DUPLICATES flags)
list(SORT flags)
string(REPLACE ";" " " flags "${flags}")
string(REPLACE "-" "_" fn "${NAME}")
file(WRITE ${COMPLETION_OUT}
  "# bash completion for ${NAME}, generated from `${NAME} --help` at build time.\n"
  "_${fn}() {\n"
  "  local cur=\"\${COMP_WORDS[COMP_CWORD]}\"\n"
  "  COMPREPLY=()\n"
  "  if [[ \"\$cur\" == -* ]]; then\n"
  "    COMPREPLY=(\$(compgen -W \"${flags}\" -- \"\$cur\"))\n"
  "  fi\n"
  "}\n"
  "complete -o default -o bashdefault -F _${fn} ${NAME}\n")
