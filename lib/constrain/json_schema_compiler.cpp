#include "constrain/json_schema_compiler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/json_depth.h"

namespace k3 {

namespace {

using Kind = JsonGrammar::Kind;
using Node = JsonGrammar::Node;

const std::set<std::string, std::less<>> kAnnotations = {"title",    "description", "$schema",  "$id",
                                                         "$comment", "default",     "examples", "deprecated",
                                                         "readOnly", "writeOnly",   "$defs",    "definitions"};
const std::set<std::string, std::less<>> kStructural = {"type",      "properties", "required", "additionalProperties",
                                                        "items",     "minItems",   "maxItems", "minLength",
                                                        "maxLength", "enum",       "const",    "anyOf",
                                                        "$ref"};

Node make(Kind kind) {
  Node n;
  n.kind = kind;
  return n;
}

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw Error(ExitCode::kBadInput, "json schema: " + path + ": " + what);
}

std::string compact(const JsonValue& v) {
  std::string s = v.dump(0);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

bool of_type(const JsonValue& v, std::string_view type) {
  using K = JsonValue::Kind;
  if (type == "null") return v.kind == K::kNull;
  if (type == "boolean") return v.kind == K::kBool;
  if (type == "string") return v.kind == K::kString;
  if (type == "integer") return v.kind == K::kInt;
  if (type == "number") return v.kind == K::kInt || v.kind == K::kFloat;
  if (type == "object") return v.kind == K::kObject;
  if (type == "array") return v.kind == K::kArray;
  return false;
}

class Compiler {
 public:
  explicit Compiler(const JsonValue& root) : root_(root) {}

  JsonGrammar run() {
    string_ = g_.add(make(Kind::kString));
    Node doc = make(Kind::kDocument);
    doc.child = compile(root_, "#", 0);
    g_.document = g_.add(doc);
    check_union_loops();
    check_finite();
    return std::move(g_);
  }

  // Any JSON value, recursively (the node is made once).
  int32_t any() {
    if (any_ >= 0) return any_;
    any_ = add(make(Kind::kUnion), "#");
    Node obj = make(Kind::kFreeObject);
    obj.key = string_;
    obj.child = any_;
    Node arr = make(Kind::kArray);
    arr.child = any_;
    std::vector<int32_t> alts = {add(obj, "#"), add(arr, "#"), string_, add(make(Kind::kNumber), "#"),
                                 literal({"true", "false", "null"}, "#")};
    g_.nodes[static_cast<size_t>(any_)].alternatives = alts;
    return any_;
  }
  JsonGrammar& grammar() { return g_; }

 private:
  int32_t add(Node n, const std::string& path) {
    if (g_.nodes.size() >= JsonSchemaLimits::kMaxNodes)
      refuse(path, "the schema compiles to more than " + std::to_string(JsonSchemaLimits::kMaxNodes) + " nodes");
    paths_.resize(g_.nodes.size() + 1);
    paths_.back() = path;
    return g_.add(std::move(n));
  }

  int32_t literal(const std::vector<std::string>& texts, const std::string& path) {
    Node n = make(Kind::kLiteral);
    n.trie = g_.new_trie();
    for (size_t i = 0; i < texts.size(); ++i) g_.add_text(n.trie, texts[i], static_cast<int32_t>(i));
    return add(n, path);
  }

  int64_t count(const JsonValue& s, const char* key, const std::string& path) {
    const JsonValue* v = s.find(key);
    if (!v) return -1;
    if (v->kind != JsonValue::Kind::kInt || v->text.empty() || v->text[0] == '-' || v->text.size() > 9)
      refuse(path, std::string("\"") + key + "\" must be a non-negative integer below 10^9");
    return std::stoll(v->text);
  }

  int32_t compile(const JsonValue& s, const std::string& path, int depth) {
    if (depth > JsonSchemaLimits::kMaxDepth)
      refuse(path, "nested more than " + std::to_string(JsonSchemaLimits::kMaxDepth) + " levels deep");
    if (s.kind == JsonValue::Kind::kBool) {
      if (!s.boolean) refuse(path, "the schema false admits no value");
      return any();
    }
    if (!s.is_object()) refuse(path, std::string("a schema must be an object (found ") + json_kind_name(s.kind) + ")");
    for (const std::string& k : s.keys)
      if (!kAnnotations.count(k) && !kStructural.count(k))
        refuse(path, "keyword \"" + k +
                         "\" is not supported (structured output enforces type, properties, required, "
                         "additionalProperties, items, minItems, maxItems, minLength, maxLength, enum, const, "
                         "anyOf, $ref, $defs)");
    auto structural_besides = [&](std::string_view keyword) {
      for (const std::string& k : s.keys)
        if (kStructural.count(k) && k != keyword) return k;
      return std::string();
    };
    if (const JsonValue* ref = s.find("$ref")) {
      if (std::string other = structural_besides("$ref"); !other.empty())
        refuse(path, "keyword \"" + other + "\" beside \"$ref\" is not supported");
      if (!ref->is_string()) refuse(path + "/$ref", "must be a string");
      return reference(ref->text, path, depth);
    }
    if (const JsonValue* any_of = s.find("anyOf")) {
      if (std::string other = structural_besides("anyOf"); !other.empty())
        refuse(path, "keyword \"" + other + "\" beside \"anyOf\" is not supported");
      if (!any_of->is_array() || any_of->items.empty()) refuse(path + "/anyOf", "must be a non-empty array");
      Node u = make(Kind::kUnion);
      for (size_t i = 0; i < any_of->items.size(); ++i)
        u.alternatives.push_back(compile(any_of->items[i], path + "/anyOf/" + std::to_string(i), depth + 1));
      return add(u, path);
    }
    std::vector<std::string> types;
    if (const JsonValue* t = s.find("type")) {
      if (t->is_string()) types.push_back(t->text);
      else if (t->is_array() && !t->items.empty())
        for (const JsonValue& x : t->items) {
          if (!x.is_string()) refuse(path + "/type", "must be a type name or a list of them");
          types.push_back(x.text);
        }
      else refuse(path + "/type", "must be a type name or a non-empty list of them");
      for (const std::string& x : types)
        if (x != "object" && x != "array" && x != "string" && x != "number" && x != "integer" && x != "boolean" &&
            x != "null")
          refuse(path + "/type", "\"" + x + "\" is not a JSON Schema type");
    }
    const JsonValue* en = s.find("enum");
    const JsonValue* co = s.find("const");
    if (en || co) {
      if (en && co) refuse(path, "keyword \"const\" beside \"enum\" is not supported");
      std::vector<JsonValue> values;
      if (co) values.push_back(*co);
      else if (!en->is_array() || en->items.empty()) refuse(path + "/enum", "must be a non-empty array");
      else values = en->items;
      std::vector<std::string> texts;
      for (const JsonValue& v : values)
        if (types.empty() || std::any_of(types.begin(), types.end(), [&](auto& t) { return of_type(v, t); }))
          texts.push_back(compact(v));
      if (texts.empty()) refuse(path, "no value of \"enum\"/\"const\" has the declared type");
      return literal(texts, path);
    }
    if (types.empty()) {
      // No type: object and array keywords imply their type; nothing at all is any value.
      if (s.find("properties") || s.find("required") || s.find("additionalProperties")) types.push_back("object");
      else if (s.find("items") || s.find("minItems") || s.find("maxItems")) types.push_back("array");
      else if (s.find("minLength") || s.find("maxLength")) types.push_back("string");
      else return any();
    }
    if (types.size() == 1) return typed(s, types[0], path, depth);
    Node u = make(Kind::kUnion);
    for (const std::string& t : types) u.alternatives.push_back(typed(s, t, path, depth));
    return add(u, path);
  }

  int32_t typed(const JsonValue& s, const std::string& type, const std::string& path, int depth) {
    if (type == "null") return literal({"null"}, path);
    if (type == "boolean") return literal({"true", "false"}, path);
    if (type == "number") return add(make(Kind::kNumber), path);
    if (type == "integer") return add(make(Kind::kInteger), path);
    if (type == "string") {
      Node n = make(Kind::kString);
      n.min_length = std::max<int64_t>(0, count(s, "minLength", path));
      n.max_length = count(s, "maxLength", path);
      if (n.max_length >= 0 && n.max_length < n.min_length) refuse(path, "maxLength is below minLength");
      if (!n.bounded_length()) return string_;
      return add(n, path);
    }
    if (type == "array") {
      Node n = make(Kind::kArray);
      n.min_items = std::max<int64_t>(0, count(s, "minItems", path));
      n.max_items = count(s, "maxItems", path);
      if (n.max_items >= 0 && n.max_items < n.min_items) refuse(path, "maxItems is below minItems");
      const int32_t self = add(n, path);
      const JsonValue* items = s.find("items");
      const int32_t child = items ? compile(*items, path + "/items", depth + 1) : any();
      g_.nodes[static_cast<size_t>(self)].child = child;
      return self;
    }
    // object
    const JsonValue* props = s.find("properties");
    const JsonValue* extra = s.find("additionalProperties");
    const JsonValue* req = s.find("required");
    if (props && !props->is_object()) refuse(path + "/properties", "must be an object");
    if (req && !req->is_array()) refuse(path + "/required", "must be an array of property names");
    const bool extra_schema = extra && !extra->is_bool();
    if (!props || props->keys.empty()) {
      if (req && !req->items.empty())
        refuse(path + "/required", "names properties that \"properties\" does not declare");
      if (extra && extra->is_bool() && !extra->boolean) {  // only {}
        Node n = make(Kind::kObject);
        n.trie = g_.new_trie();
        return add(n, path);
      }
      Node n = make(Kind::kFreeObject);
      n.key = string_;
      const int32_t self = add(n, path);
      const int32_t child = extra_schema ? compile(*extra, path + "/additionalProperties", depth + 1) : any();
      g_.nodes[static_cast<size_t>(self)].child = child;
      return self;
    }
    if (extra_schema) refuse(path + "/additionalProperties", "a schema beside \"properties\" is not supported");
    Node n = make(Kind::kObject);
    n.trie = g_.new_trie();
    std::set<std::string> required;
    if (req)
      for (const JsonValue& r : req->items) {
        if (!r.is_string()) refuse(path + "/required", "must be an array of property names");
        if (!props->find(r.text))
          refuse(path + "/required", "names \"" + r.text + "\", which \"properties\" does not declare");
        required.insert(r.text);
      }
    const int32_t self = add(n, path);
    std::vector<JsonGrammar::Property> list;
    for (size_t i = 0; i < props->keys.size(); ++i) {
      const std::string& name = props->keys[i];
      JsonGrammar::Property p;
      p.name = name;
      p.required = required.count(name) > 0;
      p.node = compile(props->items[i], path + "/properties/" + name, depth + 1);
      list.push_back(std::move(p));
    }
    Node& obj = g_.nodes[static_cast<size_t>(self)];
    for (size_t i = 0; i < list.size(); ++i)
      g_.add_text(obj.trie, compact(JsonValue::string(list[i].name)), static_cast<int32_t>(i));
    g_.nodes[static_cast<size_t>(self)].properties = std::move(list);
    return self;
  }

  int32_t reference(const std::string& ref, const std::string& path, int depth) {
    if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
    const JsonValue* target = nullptr;
    if (ref == "#") {
      target = &root_;
    } else {
      for (const char* defs : {"#/$defs/", "#/definitions/"}) {
        const std::string prefix = defs;
        if (ref.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string name = ref.substr(prefix.size());
        if (name.find('/') != std::string::npos || name.find('~') != std::string::npos) break;
        if (const JsonValue* table = root_.find(prefix.substr(2, prefix.size() - 3))) target = table->find(name);
      }
    }
    if (!target)
      refuse(path + "/$ref",
             "\"" + ref + "\" is not supported or not found (\"#\", \"#/$defs/NAME\" or \"#/definitions/NAME\")");
    // A placeholder first, so the target may refer back to itself.
    const int32_t slot = add(make(Kind::kUnion), path);
    refs_[ref] = slot;
    const int32_t body = compile(*target, ref, depth + 1);
    g_.nodes[static_cast<size_t>(slot)].alternatives = {body};
    return slot;
  }

  // A union reaching itself through unions only would read no byte on its way round.
  void check_union_loops() {
    std::vector<int> mark(g_.nodes.size(), 0);
    std::function<void(int32_t)> visit = [&](int32_t n) {
      const Node& node = g_.nodes[static_cast<size_t>(n)];
      if (node.kind != Kind::kUnion || mark[static_cast<size_t>(n)] == 2) return;
      if (mark[static_cast<size_t>(n)] == 1)
        refuse(paths_[static_cast<size_t>(n)], "\"$ref\"/\"anyOf\" refers back to itself without a value in between");
      mark[static_cast<size_t>(n)] = 1;
      for (int32_t a : node.alternatives) visit(a);
      mark[static_cast<size_t>(n)] = 2;
    };
    for (size_t i = 0; i < g_.nodes.size(); ++i) visit(static_cast<int32_t>(i));
  }

  // Every node must have a finite value (else generation could never end).
  void check_finite() {
    std::vector<char> finite(g_.nodes.size(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < g_.nodes.size(); ++i) {
        if (finite[i]) continue;
        const Node& n = g_.nodes[i];
        bool f = true;
        switch (n.kind) {
          case Kind::kDocument: f = finite[static_cast<size_t>(n.child)]; break;
          case Kind::kArray: f = n.min_items == 0 || finite[static_cast<size_t>(n.child)]; break;
          case Kind::kUnion:
            f = std::any_of(n.alternatives.begin(), n.alternatives.end(),
                            [&](int32_t a) { return finite[static_cast<size_t>(a)] != 0; });
            break;
          case Kind::kObject:
            for (const auto& p : n.properties)
              if (p.required && !finite[static_cast<size_t>(p.node)]) f = false;
            break;
          default: break;
        }
        if (f) finite[i] = 1, changed = true;
      }
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!finite[i]) refuse(paths_[i], "admits no finite value (a required property or item recurses forever)");
  }

  const JsonValue& root_;
  JsonGrammar g_;
  std::vector<std::string> paths_;
  std::map<std::string, int32_t> refs_;
  int32_t string_ = -1, any_ = -1;
};

}  // namespace

JsonGrammar compile_json_schema(const JsonValue& schema) { return Compiler(schema).run(); }

JsonGrammar compile_json_schema_text(std::string_view text) {
  if (text.size() > JsonSchemaLimits::kMaxSchemaBytes)
    throw Error(ExitCode::kBadInput, "json schema: the schema is " + std::to_string(text.size()) + " bytes; at most " +
                                         std::to_string(JsonSchemaLimits::kMaxSchemaBytes) + " are accepted");
  // Each schema level is at least two JSON levels (the schema and its "properties").
  if (json_depth(text, 2 * JsonSchemaLimits::kMaxDepth + 2) > 2 * JsonSchemaLimits::kMaxDepth + 2)
    throw Error(ExitCode::kBadInput, "json schema: nested more than " +
                                         std::to_string(2 * JsonSchemaLimits::kMaxDepth + 2) + " JSON levels deep");
  JsonValue v;
  std::string error;
  if (!parse_json(text, v, error)) throw Error(ExitCode::kBadInput, "json schema: not JSON: " + error);
  return compile_json_schema(v);
}

JsonGrammar json_object_grammar() {
  JsonValue schema = JsonValue::object();
  schema.set("type", "object");
  return compile_json_schema(schema);
}

}  // namespace k3
