#include "gpu/compute_pipeline.h"

#include "gpu/spirv_denorm_preserve.h"
#include "gpu/spirv_shaders.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {

ComputePipeline::ComputePipeline(VulkanDevice& device, const char* shader, uint32_t bindings, uint32_t push_bytes,
                                 uint32_t specialization, uint32_t sets)
    : device_(device), bindings_(bindings), push_bytes_(push_bytes), sets_(sets, VK_NULL_HANDLE) {
  VkDevice d = device_.handle();
  // DenormPreserve only where the device can keep subnormals: elsewhere
  // the choice runs the emulation, which does not depend on it.
  const std::vector<uint32_t> code =
      device_.denorm_preserve32() ? spirv_shader(shader) : spirv_without_denorm_preserve(spirv_shader(shader));
  VkShaderModuleCreateInfo module{};
  module.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  module.codeSize = code.size() * sizeof(uint32_t);
  module.pCode = code.data();
  vk_check(vkCreateShaderModule(d, &module, nullptr, &module_), std::string("loading shader ") + shader);

  std::vector<VkDescriptorSetLayoutBinding> binding(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    binding[i].binding = i;
    binding[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    binding[i].descriptorCount = 1;
    binding[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set{};
  set.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set.bindingCount = bindings;
  set.pBindings = binding.data();
  vk_check(vkCreateDescriptorSetLayout(d, &set, nullptr, &set_layout_), "creating a descriptor set layout");

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo layout{};
  layout.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &set_layout_;
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &range;
  vk_check(vkCreatePipelineLayout(d, &layout, nullptr, &layout_), "creating a pipeline layout");

  const VkSpecializationMapEntry entry{0, 0, sizeof(uint32_t)};
  VkSpecializationInfo spec{1, &entry, sizeof(uint32_t), &specialization};
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module_;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &spec;
  info.layout = layout_;
  vk_check(vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline_),
           std::string("compiling shader ") + shader);

  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, bindings * sets};
  VkDescriptorPoolCreateInfo pool{};
  pool.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  pool.maxSets = sets;
  pool.poolSizeCount = 1;
  pool.pPoolSizes = &size;
  vk_check(vkCreateDescriptorPool(d, &pool, nullptr, &pool_), "creating a descriptor pool");
  VkDescriptorSetAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  alloc.descriptorPool = pool_;
  const std::vector<VkDescriptorSetLayout> layouts(sets, set_layout_);
  alloc.descriptorSetCount = sets;
  alloc.pSetLayouts = layouts.data();
  vk_check(vkAllocateDescriptorSets(d, &alloc, sets_.data()), "allocating descriptor sets");
}

ComputePipeline::~ComputePipeline() {
  VkDevice d = device_.handle();
  if (pool_) vkDestroyDescriptorPool(d, pool_, nullptr);
  if (pipeline_) vkDestroyPipeline(d, pipeline_, nullptr);
  if (layout_) vkDestroyPipelineLayout(d, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(d, set_layout_, nullptr);
  if (module_) vkDestroyShaderModule(d, module_, nullptr);
}

void ComputePipeline::run(const std::vector<const VulkanBuffer*>& buffers, const void* push, uint32_t groups_x,
                          uint32_t groups_y) {
  // The device is idle between runs (submit_and_wait), so set 0 can be
  // rewritten in place.
  device_.submit_and_wait([&](VkCommandBuffer cb) { record(cb, 0, buffers, push, groups_x, groups_y); });
}

void ComputePipeline::record(VkCommandBuffer cb, uint32_t set, const std::vector<const VulkanBuffer*>& buffers,
                             const void* push, uint32_t groups_x, uint32_t groups_y) {
  std::vector<VkDescriptorBufferInfo> info(bindings_);
  std::vector<VkWriteDescriptorSet> write(bindings_);
  for (uint32_t i = 0; i < bindings_; ++i) {
    info[i] = {buffers[i]->handle(), 0, VK_WHOLE_SIZE};
    write[i] = {};
    write[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    write[i].dstSet = sets_[set];
    write[i].dstBinding = i;
    write[i].descriptorCount = 1;
    write[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write[i].pBufferInfo = &info[i];
  }
  vkUpdateDescriptorSets(device_.handle(), bindings_, write.data(), 0, nullptr);
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &sets_[set], 0, nullptr);
  vkCmdPushConstants(cb, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_, push);
  vkCmdDispatch(cb, groups_x, groups_y, 1);
  // The host reads the outputs in place once the fence signals: the
  // shader's writes must be made visible to host reads (a fence alone does
  // not do it on every device).
  VkMemoryBarrier to_host{};
  to_host.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr,
                       0, nullptr);
}

}  // namespace k3
