# Finds every third-party dependency from the system (Debian packages) and
# fails with the name of the package to install when one is missing.
# scripts/install-deps.sh installs all of them.

include(FindPkgConfig)

macro(k3_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR
      "k3: ${what} was not found. Install the Debian package '${package}' "
      "(or run scripts/install-deps.sh), then re-run cmake.")
  endif()
endmacro()

find_package(Threads REQUIRED)

find_package(CLI11 CONFIG QUIET)
k3_require(CLI11_FOUND "CLI11 (command-line parsing)" libcli11-dev)

find_package(simdjson CONFIG QUIET)
k3_require(simdjson_FOUND "simdjson (JSON parsing)" libsimdjson-dev)

pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
k3_require(XXHASH_FOUND "xxHash (checksums)" libxxhash-dev)

pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)
k3_require(ZSTD_FOUND "zstd (compressed trunk blocks)" libzstd-dev)

pkg_check_modules(HWY QUIET IMPORTED_TARGET libhwy)
k3_require(HWY_FOUND "Google Highway (SIMD kernels)" libhwy-dev)

pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
k3_require(PCRE2_FOUND "PCRE2 (tokenizer pre-split)" libpcre2-dev)

pkg_check_modules(ICU QUIET IMPORTED_TARGET icu-uc)
k3_require(ICU_FOUND "ICU (Unicode properties)" libicu-dev)

pkg_check_modules(LIBEDIT QUIET IMPORTED_TARGET libedit)
k3_require(LIBEDIT_FOUND "libedit (k3-chat line editing and input history)" libedit-dev)

find_package(CURL QUIET)
k3_require(CURL_FOUND "libcurl (downloads)" libcurl4-openssl-dev)

pkg_check_modules(HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
k3_require(HTTPLIB_FOUND "cpp-httplib (k3-serve's HTTP server)" libcpp-httplib-dev)

find_package(OpenSSL QUIET)
k3_require(OPENSSL_FOUND "OpenSSL (sha256)" libssl-dev)

# Optional: the Vulkan compute path (lib/gpu, --gpu) needs the loader and
# glslc to compile its shaders. Without them k3 builds, and --gpu is
# refused with one line saying so. -DK3_VULKAN=OFF leaves it out on purpose.
set(K3_HAVE_VULKAN OFF)
if(K3_VULKAN)
  find_package(Vulkan QUIET COMPONENTS glslc)
  if(Vulkan_FOUND AND Vulkan_glslc_FOUND)
    set(K3_HAVE_VULKAN ON)
  else()
    message(STATUS "k3: Vulkan or glslc not found (Debian: libvulkan-dev glslc): building without --gpu")
  endif()
endif()

if(K3_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT GTest_FOUND)
    find_package(GTest QUIET)
  endif()
  k3_require(GTest_FOUND "GoogleTest" libgtest-dev)
endif()
