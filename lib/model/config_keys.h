// Strict reading of a config.json object, for the model's config
// (model/config.cpp) and the draft's (draft/dspark_config.cpp): a key that is
// missing, has the wrong type or holds a value outside what k3 implements is
// a kBadModel error naming the file, the key (with the path of objects it is
// in) and the value found; nothing is assumed.
#pragma once

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace k3 {

// A JSON value in an error message, cut to 80 characters.
inline std::string json_excerpt(const simdjson::dom::element& e) {
  std::string s = simdjson::minify(e);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// Reads keys of one JSON object, naming them `<prefix><key>` in errors.
class ConfigKeys {
 public:
  using element = simdjson::dom::element;
  using object = simdjson::dom::object;

  ConfigKeys(std::string origin, object obj, std::string prefix = "")
      : origin_(std::move(origin)), obj_(obj), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(ExitCode::kBadModel, origin_ + ": key '" + prefix_ + key + "' " + what);
  }

  bool has(const std::string& key) const {
    element e;
    return !obj_[key].get(e) && !e.is_null();
  }

  element get(const std::string& key) const {
    element e;
    if (obj_[key].get(e)) fail(key, "is missing (required; k3 does not assume a default)");
    return e;
  }

  // The value of `key` as JSON type T (int64_t, bool, std::string_view), or
  // an error saying what it `must_be` and what was found.
  template <typename T>
  T typed(const std::string& key, const char* must_be) const {
    element e = get(key);
    T v;
    if (e.get<T>().get(v)) fail(key, std::string(must_be) + ", found " + json_excerpt(e));
    return v;
  }

  int64_t integer(const std::string& key) const { return typed<int64_t>(key, "must be an integer"); }

  // A positive integer up to `max`: sizes beyond any real model are refused
  // here, before a manifest or plan of that size is built.
  int positive(const std::string& key, int64_t max = int64_t{1} << 30) const {
    int64_t v = integer(key);
    if (v <= 0) fail(key, "must be a positive integer, found " + std::to_string(v));
    if (v > max)
      fail(key, "is " + std::to_string(v) + ", more than the " + std::to_string(max) +
                    " k3 accepts (no real model is that large; is the config damaged?)");
    return static_cast<int>(v);
  }

  double number(const std::string& key) const {
    element e = get(key);
    double v;
    if (e.get_double().get(v)) {
      int64_t i;
      if (e.get_int64().get(i)) fail(key, "must be a number, found " + json_excerpt(e));
      v = static_cast<double>(i);
    }
    if (!std::isfinite(v)) fail(key, "must be a finite number, found " + json_excerpt(e));
    return v;
  }

  bool boolean(const std::string& key) const { return typed<bool>(key, "must be true or false"); }

  std::string string(const std::string& key) const {
    return std::string(typed<std::string_view>(key, "must be a string"));
  }

  void require_string(const std::string& key, const std::string& want, const std::string& why) const {
    std::string v = string(key);
    if (v != want) fail(key, "is \"" + v + "\"; k3 implements only \"" + want + "\"" + why);
  }

  void require_bool(const std::string& key, bool want, const std::string& why) const {
    bool v = boolean(key);
    if (v != want)
      fail(key,
           std::string("is ") + (v ? "true" : "false") + "; k3 implements only " + (want ? "true" : "false") + why);
  }

  void require_int(const std::string& key, int64_t want, const std::string& why) const {
    int64_t v = integer(key);
    if (v != want) fail(key, "is " + std::to_string(v) + "; k3 implements only " + std::to_string(want) + why);
  }

  ConfigKeys child(const std::string& key) const {
    element e = get(key);
    object o;
    if (e.get_object().get(o)) fail(key, "must be an object, found " + json_excerpt(e));
    return ConfigKeys(origin_, o, prefix_ + key + ".");
  }

  std::vector<int64_t> int_list(const std::string& key) const {
    element e = get(key);
    simdjson::dom::array a;
    if (e.get_array().get(a)) fail(key, "must be a list of integers, found " + json_excerpt(e));
    std::vector<int64_t> out;
    for (element x : a) {
      int64_t v;
      if (x.get_int64().get(v)) fail(key, "must be a list of integers, found element " + json_excerpt(x));
      out.push_back(v);
    }
    return out;
  }

  object obj() const { return obj_; }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  object obj_;
  std::string prefix_;
};

}  // namespace k3
