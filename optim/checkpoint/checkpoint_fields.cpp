#include "optim/checkpoint/checkpoint_fields.hpp"

namespace zrt {

namespace {

using Params = zrt_checkpoint_params_t;
using Tensor = zrt_checkpoint_tensor_t;

const ParamTable<Params, SaveOptions> kParams{
    "zrt_checkpoint_params_field",
    "params",
    {
        {ZRT_CHECKPOINT_PARAM_FIELD_METADATA, "metadata", nullptr, nullptr,
         [](const Params &p, std::map<std::string, std::string> &, SaveOptions &o) {
           require_nonnull(p.metadata, "params->metadata");
           o.metadata = p.metadata;
         }},
        {ZRT_CHECKPOINT_PARAM_FIELD_KEEP_LAST, "keep_last", nullptr, nullptr,
         [](const Params &p, std::map<std::string, std::string> &, SaveOptions &o) {
           if (p.keep_last < 0)
             fail(ZRT_ERR_INVALID_ARGUMENT, "params->keep_last is {}: it must be >= 0",
                  p.keep_last);
           o.keep_last = p.keep_last;
         }},
    }};

const ReportTable<Tensor, Tensor> kTensor{
    "zrt_checkpoint_tensor_field",
    "tensor_p",
    {
        {ZRT_CHECKPOINT_TENSOR_FIELD_NAME, "name",
         [](const Tensor &t, Tensor &o) { o.name = t.name; }},
        {ZRT_CHECKPOINT_TENSOR_FIELD_SHAPE, "ndim, shape, numel",
         [](const Tensor &t, Tensor &o) {
           o.ndim = t.ndim;
           for (int d = 0; d < 8; ++d)
             o.shape[d] = t.shape[d];
           o.numel = t.numel;
         }},
        {ZRT_CHECKPOINT_TENSOR_FIELD_CHECKSUM, "checksum, has_checksum",
         [](const Tensor &t, Tensor &o) {
           o.checksum = t.checksum;
           o.has_checksum = t.has_checksum;
         }},
    }};

}  // namespace

const ParamTable<Params, SaveOptions> &checkpoint_params_table() {
  return kParams;
}

const ReportTable<Tensor, Tensor> &checkpoint_tensor_table() {
  return kTensor;
}

}  // namespace zrt
