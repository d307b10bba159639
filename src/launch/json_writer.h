// JsonWriter: builds one JSON document for benchmark reports, with correct
// string escaping and comma placement. Not a general JSON library: no
// parsing, no pretty-printing.
//
//   JsonWriter j;
//   j.begin_object();
//   j.key("mops").value(12.5);
//   j.key("config").begin_object().key("op").value("read").end_object();
//   j.end_object();
//   std::string text = j.str();
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace drtmx::bench {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string& k);
  JsonWriter& value(const std::string& s);
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double v, int precision = 4);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(bool b);
  // Inserts `json`, a complete JSON value produced elsewhere (e.g. another
  // report), as the next value. The caller vouches for its syntax.
  JsonWriter& raw(const std::string& json);

  // The document; complete once every begin_* has its end_*.
  const std::string& str() const { return out_; }
  bool complete() const { return depth_.empty() && !out_.empty(); }

 private:
  void before_value();
  static void escape(const std::string& s, std::string* out);
  std::string out_;
  std::vector<bool> depth_;  // per open container: has it got an element yet
  bool after_key_ = false;
};

// Writes `text` to `path`; an error names the file.
bool write_file(const std::string& path, const std::string& text, std::string* error);

}  // namespace drtmx::bench
