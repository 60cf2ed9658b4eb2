// Every field_mask enum of the public headers against the library's field tables
// (runtime/field_table.hpp), and against the Fortran module: a field added to a header
// without a row in its table, a row whose bit the header does not have, a configuration key
// that does not exist, or a Fortran constant that drifted from the C value fails here.
// The headers are read as text, so this test shares no code with the tables it checks.
#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/field_table.hpp"
#include "zerort/defs.h"

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct HeaderEnum {
  std::string name;                        // zrt_engine_params_field
  std::string file;                        // engine.h
  std::map<std::string, uint64_t> fields;  // without _ALL
  std::optional<uint64_t> all;             // the _ALL value, if any
};

// "ZRT_BIT(5)" or "(ZRT_BIT(5) - 1)"; anything else is a form this test does not know.
std::optional<uint64_t> field_value(const std::string &text) {
  std::smatch m;
  static const std::regex bit(R"(^\s*ZRT_BIT\((\d+)\)\s*$)");
  static const std::regex all(R"(^\s*\(\s*ZRT_BIT\((\d+)\)\s*-\s*1\s*\)\s*$)");
  if (std::regex_match(text, m, bit)) return uint64_t{1} << std::stoi(m[1]);
  if (std::regex_match(text, m, all)) return (uint64_t{1} << std::stoi(m[1])) - 1;
  return std::nullopt;
}

// A field group of a public header: "@name zrt_engine_params_field" ... "@{" then one
// #define per field, up to "@}".
std::vector<HeaderEnum> header_enums() {
  std::vector<HeaderEnum> out;
  static const std::regex block(R"(@name\s+(zrt_\w+_field)\b[^@]*@\{([\s\S]*?)@\})");
  static const std::regex entry(
      R"(#define\s+(ZRT_\w+)\s+((?:\([^/\n]*\))|(?:ZRT_BIT\(\d+\))|\S+))");
  for (const char *layer : {"runtime", "memory", "comm", "optim", "api"}) {
    const fs::path dir = fs::path(ZRT_SOURCE_DIR) / layer / "include/zerort";
    for (const auto &file : fs::directory_iterator(dir)) {
      if (file.path().extension() != ".h") continue;
      const std::string text = read_text(file.path());
      for (std::sregex_iterator b(text.begin(), text.end(), block), end; b != end; ++b) {
        HeaderEnum e;
        e.name = (*b)[1];
        e.file = file.path().filename().string();
        const std::string body = (*b)[2];
        for (std::sregex_iterator f(body.begin(), body.end(), entry); f != end; ++f) {
          const std::string name = (*f)[1];
          std::optional<uint64_t> value = field_value((*f)[2]);
          EXPECT_TRUE(value.has_value()) << e.file << ": " << name << " = " << (*f)[2]
                                         << " is not of the form ZRT_BIT(N) or (ZRT_BIT(N) - 1)";
          if (!value) continue;
          if (name.ends_with("_ALL"))
            e.all = *value;
          else
            e.fields[name] = *value;
        }
        out.push_back(std::move(e));
      }
    }
  }
  return out;
}

const zrt::FieldTableInfo *table_of(const std::string &field_enum) {
  for (const zrt::FieldTableInfo &t : zrt::field_tables())
    if (field_enum == t.field_enum) return &t;
  return nullptr;
}

// A field_mask has 64 usable bits: ZRT_BIT is a uint64_t, not an int enumerator.
static_assert(ZRT_BIT(63) == uint64_t{1} << 63 && sizeof(ZRT_BIT(0)) == 8);

TEST(FieldTables, TheHeadersHaveFieldEnums) {
  // The parser must see the headers at all, or every test below passes vacuously.
  std::vector<HeaderEnum> enums = header_enums();
  EXPECT_GE(enums.size(), 14u);
  std::set<std::string> names;
  for (const HeaderEnum &e : enums)
    names.insert(e.name);
  EXPECT_TRUE(names.count("zrt_engine_params_field"));
  EXPECT_TRUE(names.count("zrt_step_report_field"));
}

TEST(FieldTables, EveryFieldOfEveryHeaderEnumHasARowAndNoRowIsExtra) {
  for (const HeaderEnum &e : header_enums()) {
    const zrt::FieldTableInfo *t = table_of(e.name);
    ASSERT_NE(t, nullptr) << e.file << ": enum " << e.name << " has no field table";
    std::map<uint64_t, std::string> rows;
    for (const zrt::FieldRow &r : t->rows) {
      EXPECT_EQ(std::popcount(r.bit), 1) << e.name << " row " << r.members << ": not one bit";
      EXPECT_TRUE(rows.emplace(r.bit, r.members).second)
          << e.name << ": two rows for bit 0x" << std::hex << r.bit;
    }
    uint64_t all = 0;
    for (const auto &[name, value] : e.fields) {
      EXPECT_TRUE(rows.count(value)) << e.file << ": " << name << " has no row in its table";
      all |= value;
    }
    for (const auto &[bit, members] : rows)
      EXPECT_TRUE(all & bit) << e.name << ": the row for " << members << " (bit 0x" << std::hex
                             << bit << ") has no enumerator in " << e.file;
    ASSERT_TRUE(e.all.has_value()) << e.file << ": " << e.name << " has no _ALL value";
    EXPECT_EQ(*e.all, all) << e.file << ": " << e.name << "'s _ALL is not the OR of its fields";
  }
}

TEST(FieldTables, EveryTableBelongsToAHeaderEnum) {
  std::set<std::string> names;
  for (const HeaderEnum &e : header_enums())
    names.insert(e.name);
  for (const zrt::FieldTableInfo &t : zrt::field_tables())
    EXPECT_TRUE(names.count(t.field_enum)) << "table " << t.field_enum << " has no enum";
}

TEST(FieldTables, EveryConfigurationKeyOfARowExists) {
  const zrt::ConfigSchema &schema = zrt::ConfigSchema::library();
  int keys = 0;
  for (const zrt::FieldTableInfo &t : zrt::field_tables())
    for (const zrt::FieldRow &r : t.rows) {
      if (r.key == nullptr) continue;
      std::stringstream list(r.key);
      for (std::string key; std::getline(list, key, ',');) {
        key.erase(0, key.find_first_not_of(' '));
        for (const char *space : {"host", "pinned_host", "device"}) {
          std::string k = std::regex_replace(key, std::regex(R"(\{space\})"), space);
          EXPECT_NE(schema.find(k), nullptr)
              << t.field_enum << " row " << r.members << " names the unknown key " << k;
          ++keys;
        }
      }
    }
  EXPECT_GT(keys, 20);
}

// The module as gen_fortran.py wrote it from the headers (the build's zerort.F90).
TEST(FieldTables, TheFortranModuleAgreesWithTheHeaders) {
#ifndef ZRT_FORTRAN_MODULE_SOURCE
  GTEST_SKIP() << "built without the Fortran module";
#else
  const std::string text = read_text(ZRT_FORTRAN_MODULE_SOURCE);
  ASSERT_FALSE(text.empty()) << ZRT_FORTRAN_MODULE_SOURCE;
  std::map<std::string, uint64_t> fortran;
  static const std::regex constant(R"((ZRT_\w+_FIELD_\w+)\s*=\s*(\d+))");
  for (std::sregex_iterator f(text.begin(), text.end(), constant), end; f != end; ++f)
    fortran[(*f)[1]] = std::stoull((*f)[2]);
  ASSERT_FALSE(fortran.empty());
  std::map<std::string, uint64_t> c;
  for (const HeaderEnum &e : header_enums()) {
    std::map<std::string, uint64_t> all = e.fields;
    if (e.all && !e.fields.empty()) {
      const std::string &first = e.fields.begin()->first;
      all[first.substr(0, first.find("_FIELD_") + 7) + "ALL"] = *e.all;
    }
    bool bound = false;
    for (const auto &[name, value] : all) {
      c[name] = value;
      bound = bound || fortran.count(name) > 0;
    }
    // The module binds every struct, so every bit, _ALL included.
    EXPECT_TRUE(bound) << "the Fortran module lacks " << e.name;
    for (const auto &[name, value] : all)
      EXPECT_TRUE(fortran.count(name))
          << "the Fortran module binds " << e.name << " but lacks " << name;
  }
  for (const auto &[name, value] : fortran) {
    ASSERT_TRUE(c.count(name)) << "Fortran's " << name << " is in no C header";
    EXPECT_EQ(value, c[name]) << name << ": Fortran " << value << ", C " << c[name];
  }
#endif
}

}  // namespace
