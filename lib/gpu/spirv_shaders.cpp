#include "gpu/spirv_shaders.h"

#include <cstring>
#include <string>

#include "common/error.h"

// Defined by the sources cmake/K3EmbedFile.cmake generates from the .spv files.
namespace k3::embedded {
extern const unsigned char spirv_matmul_bf16[];
extern const unsigned long spirv_matmul_bf16_size;
extern const unsigned char spirv_matmul_mxfp4[];
extern const unsigned long spirv_matmul_mxfp4_size;
extern const unsigned char spirv_fma_probe[];
extern const unsigned long spirv_fma_probe_size;
extern const unsigned char spirv_matmul_bf16_native[];
extern const unsigned long spirv_matmul_bf16_native_size;
extern const unsigned char spirv_matmul_mxfp4_native[];
extern const unsigned long spirv_matmul_mxfp4_native_size;
extern const unsigned char spirv_fma_rate[];
extern const unsigned long spirv_fma_rate_size;
extern const unsigned char spirv_rms_norm[];
extern const unsigned long spirv_rms_norm_size;
extern const unsigned char spirv_situ[];
extern const unsigned long spirv_situ_size;
extern const unsigned char spirv_latent_attention[];
extern const unsigned long spirv_latent_attention_size;
extern const unsigned char spirv_kda_recurrence[];
extern const unsigned long spirv_kda_recurrence_size;
extern const unsigned char spirv_kda_conv[];
extern const unsigned long spirv_kda_conv_size;
extern const unsigned char spirv_attn_res_mix[];
extern const unsigned long spirv_attn_res_mix_size;
extern const unsigned char spirv_kda_l2norm[];
extern const unsigned long spirv_kda_l2norm_size;
extern const unsigned char spirv_kda_gate[];
extern const unsigned long spirv_kda_gate_size;
extern const unsigned char spirv_kda_output[];
extern const unsigned long spirv_kda_output_size;
}  // namespace k3::embedded

namespace k3 {

std::vector<uint32_t> spirv_shader(const char* name) {
  struct Entry {
    const char* name;
    const unsigned char* bytes;
    unsigned long size;
  };
  const Entry table[] = {
      {"matmul_bf16", embedded::spirv_matmul_bf16, embedded::spirv_matmul_bf16_size},
      {"matmul_mxfp4", embedded::spirv_matmul_mxfp4, embedded::spirv_matmul_mxfp4_size},
      {"fma_probe", embedded::spirv_fma_probe, embedded::spirv_fma_probe_size},
      {"matmul_bf16_native", embedded::spirv_matmul_bf16_native, embedded::spirv_matmul_bf16_native_size},
      {"matmul_mxfp4_native", embedded::spirv_matmul_mxfp4_native, embedded::spirv_matmul_mxfp4_native_size},
      {"fma_rate", embedded::spirv_fma_rate, embedded::spirv_fma_rate_size},
      {"rms_norm", embedded::spirv_rms_norm, embedded::spirv_rms_norm_size},
      {"situ", embedded::spirv_situ, embedded::spirv_situ_size},
      {"latent_attention", embedded::spirv_latent_attention, embedded::spirv_latent_attention_size},
      {"kda_recurrence", embedded::spirv_kda_recurrence, embedded::spirv_kda_recurrence_size},
      {"kda_conv", embedded::spirv_kda_conv, embedded::spirv_kda_conv_size},
      {"attn_res_mix", embedded::spirv_attn_res_mix, embedded::spirv_attn_res_mix_size},
      {"kda_l2norm", embedded::spirv_kda_l2norm, embedded::spirv_kda_l2norm_size},
      {"kda_gate", embedded::spirv_kda_gate, embedded::spirv_kda_gate_size},
      {"kda_output", embedded::spirv_kda_output, embedded::spirv_kda_output_size},
  };
  for (const Entry& e : table) {
    if (std::strcmp(e.name, name) != 0) continue;
    // Copied into words: the embedded bytes carry no alignment.
    std::vector<uint32_t> words(e.size / sizeof(uint32_t));
    std::memcpy(words.data(), e.bytes, words.size() * sizeof(uint32_t));
    return words;
  }
  throw Error(ExitCode::kInternal, std::string("gpu: no shader named ") + name + " is built in");
}

}  // namespace k3
