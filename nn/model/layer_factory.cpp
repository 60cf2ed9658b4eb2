// make_layer: a layer from its JSON object, every key and shape checked.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include <zerort/nn/nearest_name.hpp>
#include <zerort/nn/normal.hpp>

#include "block_layers.hpp"
#include "dense_layers.hpp"
#include "initialization.hpp"
#include "pointwise_layers.hpp"

namespace zrt::nn::model {

std::string shape_text(const Shape &shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

float *Buffer::get(int64_t n) {
  if (static_cast<int64_t>(view.extent(0)) < n)
    view = Kokkos::View<float *, MemSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "zrt_model_buffer"), n);
  return view.data();
}

std::vector<float> normal_values(std::mt19937_64 &rng, int64_t n, double std) {
  Normal normal(rng());
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = static_cast<float>(normal() * std);
  return v;
}

std::string Layer::describe() const {
  return type();
}

void check_keys(const nlohmann::json &spec, const std::vector<std::string_view> &known,
                const std::string &where) {
  if (!spec.is_object()) throw std::invalid_argument(fmt::format("{}: not a JSON object", where));
  for (const auto &item : spec.items()) {
    bool found = false;
    for (std::string_view k : known)
      found = found || k == item.key();
    if (found) continue;
    const std::string near = nearest_name(item.key(), known, 3);
    throw std::invalid_argument(fmt::format(
        "{}: unknown key \"{}\"{}; known: {}", where, item.key(),
        near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near), fmt::join(known, ", ")));
  }
}

namespace {

const std::vector<std::string_view> kTypes = {"linear",    "relu",        "tanh",     "sigmoid",
                                              "gelu",      "layernorm",   "dropout",  "residual",
                                              "attention", "transformer", "embedding"};

int64_t positive(const nlohmann::json &spec, const char *key, const std::string &where,
                 std::optional<int64_t> fallback = std::nullopt) {
  if (!spec.contains(key)) {
    if (fallback) return *fallback;
    throw std::invalid_argument(fmt::format("{}: \"{}\" is required", where, key));
  }
  const nlohmann::json &v = spec.at(key);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0)
    throw std::invalid_argument(
        fmt::format("{}: \"{}\" must be a positive integer, not {}", where, key, v.dump()));
  return v.get<int64_t>();
}

double number(const nlohmann::json &spec, const char *key, double fallback,
              const std::string &where) {
  if (!spec.contains(key)) return fallback;
  if (!spec.at(key).is_number())
    throw std::invalid_argument(
        fmt::format("{}: \"{}\" must be a number, not {}", where, key, spec.at(key).dump()));
  return spec.at(key).get<double>();
}

bool flag(const nlohmann::json &spec, const char *key, bool fallback, const std::string &where) {
  if (!spec.contains(key)) return fallback;
  if (!spec.at(key).is_boolean())
    throw std::invalid_argument(
        fmt::format("{}: \"{}\" must be true or false, not {}", where, key, spec.at(key).dump()));
  return spec.at(key).get<bool>();
}

// The sequence's rows are (T, C): heads must divide C.
void check_sequence_input(const Shape &in, int64_t width, int64_t heads, const std::string &where,
                          const char *what) {
  if (in.size() != 2)
    throw std::invalid_argument(
        fmt::format("{}: {} takes a sequence (positions, features) per sample, but its input is {}",
                    where, what, shape_text(in)));
  if (width % heads != 0)
    throw std::invalid_argument(
        fmt::format("{}: {} features ({}, dimension 1 of its input {}) must divide by heads ({})",
                    where, what, width, shape_text(in), heads));
}

// A dropout layer's salt: FNV-1a of its place in the model ("layers[3]",
// "layers[2].layers[0]"), without the "model config SOURCE: " before it, so that the masks
// depend on the seed and the layer alone: not on the configuration file's path or format,
// nor on the standard library (std::hash is its own).
uint64_t place_hash(const std::string &where) {
  std::string_view place(where);
  const size_t at = place.find(": layers[");
  if (at != std::string_view::npos) place.remove_prefix(at + 2);
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : place) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::unique_ptr<Layer> make_layer(const nlohmann::json &spec, const Shape &in,
                                  const std::string &where) {
  if (!spec.is_object() || !spec.contains("type") || !spec.at("type").is_string())
    throw std::invalid_argument(fmt::format("{}: a layer is an object with a \"type\" ({})", where,
                                            fmt::join(kTypes, ", ")));
  const std::string type = spec.at("type").get<std::string>();
  if (in.empty())
    throw std::invalid_argument(fmt::format("{}: {} has an input of no dimensions", where, type));
  if (type == "linear") {
    check_keys(spec, {"type", "features", "bias"}, where);
    return std::make_unique<Linear>(in, positive(spec, "features", where),
                                    flag(spec, "bias", true, where));
  }
  if (type == "relu" || type == "tanh" || type == "sigmoid") {
    check_keys(spec, {"type"}, where);
    return std::make_unique<ActivationLayer>(in, type == "relu"   ? Activation::relu
                                                 : type == "tanh" ? Activation::tanh
                                                                  : Activation::sigmoid);
  }
  if (type == "gelu") {
    check_keys(spec, {"type", "approximate"}, where);
    const std::string form = spec.value("approximate", std::string("none"));
    if (form != "none" && form != "tanh")
      throw std::invalid_argument(fmt::format(
          "{}: gelu's \"approximate\" is \"none\" (erf) or \"tanh\", not \"{}\"", where, form));
    return std::make_unique<ActivationLayer>(
        in, form == "tanh" ? Activation::gelu_tanh : Activation::gelu_erf);
  }
  if (type == "layernorm") {
    check_keys(spec, {"type", "eps"}, where);
    const double eps = number(spec, "eps", 1e-5, where);
    if (!(eps > 0)) throw std::invalid_argument(fmt::format("{}: \"eps\" must be positive", where));
    return std::make_unique<LayerNorm>(in, eps);
  }
  if (type == "dropout") {
    check_keys(spec, {"type", "p"}, where);
    const double p = number(spec, "p", 0.5, where);
    if (!(p >= 0 && p < 1))
      throw std::invalid_argument(fmt::format("{}: \"p\" must be in [0, 1), not {}", where, p));
    return std::make_unique<Dropout>(in, p, place_hash(where));
  }
  if (type == "residual") {
    check_keys(spec, {"type", "layers"}, where);
    if (!spec.contains("layers") || !spec.at("layers").is_array() || spec.at("layers").empty())
      throw std::invalid_argument(
          fmt::format("{}: a residual block needs \"layers\", a non-empty list", where));
    std::vector<std::pair<std::string, std::unique_ptr<Layer>>> body;
    Shape shape = in;
    for (size_t i = 0; i < spec.at("layers").size(); ++i) {
      auto layer = make_layer(spec.at("layers")[i], shape, fmt::format("{}.layers[{}]", where, i));
      if (layer->reads_tokens())
        throw std::invalid_argument(
            fmt::format("{}.layers[{}]: an embedding must be the model's first layer", where, i));
      shape = layer->out_shape();
      body.emplace_back(std::to_string(i), std::move(layer));
    }
    for (size_t d = 0; d < std::max(shape.size(), in.size()); ++d)
      if (shape.size() != in.size() || shape[d] != in[d])
        throw std::invalid_argument(fmt::format(
            "{}: a residual block's layers must end in its input's shape {}, but end in {} "
            "(dimension {} differs)",
            where, shape_text(in), shape_text(shape), d));
    return std::make_unique<Residual>(in, std::make_unique<Sequence>(in, std::move(body)));
  }
  if (type == "attention") {
    check_keys(spec, {"type", "heads", "causal"}, where);
    const int64_t heads = positive(spec, "heads", where);
    if (in.back() % 3 != 0)
      throw std::invalid_argument(fmt::format(
          "{}: attention takes rows [q | k | v] of 3 x features, but dimension 1 of its input {} "
          "is {}, not a multiple of 3",
          where, shape_text(in), in.back()));
    check_sequence_input(in, in.back() / 3, heads, where, "attention");
    return std::make_unique<Attention>(in, static_cast<int>(heads),
                                       flag(spec, "causal", false, where));
  }
  if (type == "transformer") {
    check_keys(spec, {"type", "heads", "causal", "mlp_ratio", "eps"}, where);
    const int64_t heads = positive(spec, "heads", where);
    check_sequence_input(in, in.back(), heads, where, "a transformer block");
    return make_transformer(in, static_cast<int>(heads), flag(spec, "causal", false, where),
                            positive(spec, "mlp_ratio", where, 4),
                            number(spec, "eps", 1e-5, where));
  }
  if (type == "embedding") {
    check_keys(spec, {"type", "vocab", "positions", "features"}, where);
    if (in.size() != 1)
      throw std::invalid_argument(fmt::format(
          "{}: an embedding takes token ids (positions) per sample, but its input is {}", where,
          shape_text(in)));
    const int64_t positions = positive(spec, "positions", where, in[0]);
    if (positions < in[0])
      throw std::invalid_argument(fmt::format(
          "{}: the input has {} positions (dimension 0 of {}) but the embedding only {}", where,
          in[0], shape_text(in), positions));
    return std::make_unique<Embedding>(in, positive(spec, "vocab", where), positions,
                                       positive(spec, "features", where));
  }
  const std::string near = nearest_name(type, kTypes, 3);
  throw std::invalid_argument(fmt::format(
      "{}: unknown layer type \"{}\"{}; known: {}", where, type,
      near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near), fmt::join(kTypes, ", ")));
}

}  // namespace zrt::nn::model
