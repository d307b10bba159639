#include "json_writer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace drtmx::bench {

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!depth_.empty()) {
    if (depth_.back()) out_ += ", ";
    depth_.back() = true;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  depth_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  if (!depth_.empty()) depth_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  depth_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  if (!depth_.empty()) depth_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(const std::string& k) {
  before_value();
  escape(k, &out_);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(const std::string& s) {
  before_value();
  escape(s, &out_);
  return *this;
}

JsonWriter& JsonWriter::value(double v, int precision) {
  before_value();
  if (!std::isfinite(v)) {
    out_ += "null";  // JSON has no NaN or infinity
    return *this;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::raw(const std::string& json) {
  before_value();
  size_t end = json.size();
  while (end > 0 && (json[end - 1] == '\n' || json[end - 1] == ' ')) --end;
  out_.append(json, 0, end);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

void JsonWriter::escape(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

bool write_file(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream f(path, std::ios::trunc);
  if (f) f << text;
  if (!f) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace drtmx::bench
