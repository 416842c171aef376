# deps.sh — install the Debian packages ShardScope needs, only when missing.
# Sourced by scripts/test and scripts/demo. Set SS_NO_APT=1 to skip.
ss_install_deps() {
  local pkgs=(cmake ninja-build g++ pkg-config libopenblas-dev catch2 libcli11-dev nlohmann-json3-dev
              libopenmpi-dev openmpi-bin doxygen libimgui-dev libstb-dev libglfw3-dev xvfb xauth imagemagick "$@")
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ] || [ -n "${SS_NO_APT:-}" ]; then return 0; fi
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q || return 1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" || return 1
}

# What ./scripts/fuzz adds (clang's libFuzzer and sanitizer runtimes live in
# libclang-rt-dev, only a "Recommends" of clang): ss_install_deps "${SS_FUZZ_PKGS[@]}".
SS_FUZZ_PKGS=(clang libclang-rt-dev)

# Configure and build (Release, both cores) into build/.
# The three parts that depend on the machine are AUTO unless the caller's
# environment says otherwise (a build folder configured by hand keeps no stale OFF).
ss_build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_VIZ="${SHARDSCOPE_VIZ:-AUTO}" \
    -DSHARDSCOPE_MPI="${SHARDSCOPE_MPI:-AUTO}" -DSHARDSCOPE_CUDA="${SHARDSCOPE_CUDA:-AUTO}" "$@" || return 1
  cmake --build build -j"$(nproc)" || return 1
}
