#include "check/models.h"

namespace drtmx::check {

namespace {

std::vector<Model> make_models() {
  // Every model forbids what no database may do: values out of nowhere,
  // orders that no list could have had, a transaction blind to itself.
  std::set<std::string> rc{"incompatible-order",
                           "duplicate-elements",
                           "garbage-read",
                           "internal",
                           "future-read",
                           "G0",
                           "G1a",
                           "G1b",
                           "G1c",
                           "dirty-update"};
  std::set<std::string> si = rc;
  si.insert({"G-single", "lost-update"});
  std::set<std::string> ser = si;
  ser.insert("G2-item");
  std::set<std::string> session = ser;
  for (const char* c : {"G0", "G1c", "G-single", "G2-item"}) {
    session.insert(std::string(c) + "-process");
  }
  std::set<std::string> strict = session;
  for (const char* c : {"G0", "G1c", "G-single", "G2-item"}) {
    strict.insert(std::string(c) + "-realtime");
  }
  return {{"read-committed", rc, false, false},
          {"snapshot-isolation", si, false, false},
          {"serializable", ser, false, false},
          {"strong-session-serializable", session, true, false},
          {"strict-serializable", strict, true, true}};
}

}  // namespace

const std::vector<Model>& all_models() {
  static const std::vector<Model> models = make_models();
  return models;
}

Result<std::vector<Model>> parse_models(std::string_view list) {
  std::vector<Model> out;
  while (true) {
    size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    bool known = false;
    for (const Model& m : all_models()) {
      if (m.name == name) {
        out.push_back(m);
        known = true;
      }
    }
    if (!known) {
      std::string names;
      for (const Model& m : all_models()) names += (names.empty() ? "" : ", ") + m.name;
      return invalid_argument("unknown model '" + std::string(name) +
                              "'; use one or more (comma-separated) of " + names);
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace drtmx::check
