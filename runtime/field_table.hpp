// The field_mask structs of the C ABI, each driven by one table.
//
// An input struct (zrt_engine_params_t, zrt_pool_params_t, ...) has a ParamTable: per
// field, its bit, its member, the configuration key it sets (if any) and the converter
// that checks the member and turns it into that key's text (or applies it to a target of
// the struct's own). An output struct (zrt_step_report_t, zrt_pool_stats_t, ...) has a
// ReportTable: per field, its bit, the members it covers and how they are filled.
//
// The mask a struct accepts is the table's, so a field cannot pass the mask check and then
// be lost on the way in; and every table registers itself under the name of its field
// enum, so tests/runtime/test_field_tables.cpp can hold every *_FIELD_* enumerator of the
// public headers (and of the Fortran module) against a row.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/error.hpp"

namespace zrt {

// What the registry knows of one row.
struct FieldRow {
  uint64_t bit;
  const char *members;  // "stage", or "reserved_bytes, peak_reserved_bytes"
  const char *key;      // the configuration key it sets, or nullptr
};

struct FieldTableInfo {
  const char *field_enum;  // "zrt_engine_params_field": the enum in the public header
  const char *argument;    // "params", "report_p": how messages name the struct
  std::vector<FieldRow> rows;
};

// Every table of the library, in registration order. Thread-safe after static
// initialization (tables register themselves then).
const std::vector<FieldTableInfo> &field_tables();
void register_field_table(FieldTableInfo info);

// Throws Error(ZRT_ERR_INVALID_ARGUMENT) when mask has bits outside known.
void check_field_mask(uint64_t mask, uint64_t known, const char *argument);

// --- converters for ParamTable rows ------------------------------------------------------

template <class>
struct MemberOf;
template <class C, class T>
struct MemberOf<T C::*> {
  using Owner = C;
  using Type = T;
};

// The configuration text of a number member: integers as they are, reals with every digit.
template <auto Member>
std::string number_text(const typename MemberOf<decltype(Member)>::Owner &params) {
  const auto &value = params.*Member;
  if constexpr (std::is_floating_point_v<std::remove_cvref_t<decltype(value)>>)
    return fmt::format("{:.17g}", value);
  else
    return fmt::format("{}", value);
}

// The configuration text of an int used as a flag: any nonzero value is true.
template <auto Member>
std::string flag_text(const typename MemberOf<decltype(Member)>::Owner &params) {
  return params.*Member != 0 ? "true" : "false";
}

// --- input structs -------------------------------------------------------------------------

// Target: what the struct's fields resolve into besides configuration keys (a struct of the
// caller's; use NoTarget when every field is a key).
struct NoTarget {};

template <class Params, class Target = NoTarget>
class ParamTable {
 public:
  struct Row {
    uint64_t bit;
    const char *member;
    // The configuration key(s) the member sets, for people and the registry; nullptr for
    // members that are none. With text, the one key it names gets text()'s value (the
    // member checked and converted).
    const char *key = nullptr;
    std::string (*text)(const Params &) = nullptr;
    // Applies the member to the settings and the target: members that set several keys,
    // or that are no configuration key.
    void (*apply)(const Params &, std::map<std::string, std::string> &, Target &) = nullptr;
  };

  ParamTable(const char *field_enum, const char *argument, std::initializer_list<Row> rows)
      : argument_(argument), rows_(rows) {
    FieldTableInfo info{field_enum, argument, {}};
    for (const Row &r : rows_) {
      known_ |= r.bit;
      info.rows.push_back({r.bit, r.member, r.key});
    }
    register_field_table(std::move(info));
  }

  uint64_t known() const { return known_; }
  const std::vector<Row> &rows() const { return rows_; }

  // Reads the fields params->field_mask names: key text into settings, the rest into
  // target. params may be NULL (nothing set). Throws Error(ZRT_ERR_INVALID_ARGUMENT) for
  // unknown bits, before reading anything.
  void read(const Params *params, std::map<std::string, std::string> &settings,
            Target &target) const {
    if (params == nullptr) return;
    check_field_mask(params->field_mask, known_, argument_);
    for (const Row &r : rows_) {
      if ((params->field_mask & r.bit) == 0) continue;
      if (r.key != nullptr && r.text != nullptr) settings[r.key] = r.text(*params);
      if (r.apply != nullptr) r.apply(*params, settings, target);
    }
  }
  void read(const Params *params, std::map<std::string, std::string> &settings) const {
    Target ignored;
    read(params, settings, ignored);
  }

  // True when params sets the field of `bit`.
  static bool has(const Params *params, uint64_t bit) {
    return params != nullptr && (params->field_mask & bit) != 0;
  }

 private:
  const char *argument_;
  std::vector<Row> rows_;
  uint64_t known_ = 0;
};

// --- output structs ------------------------------------------------------------------------

template <class Report, class Source>
class ReportTable {
 public:
  struct Row {
    uint64_t bit;
    const char *members;
    void (*fill)(const Source &, Report &);
  };

  ReportTable(const char *field_enum, const char *argument, std::initializer_list<Row> rows)
      : argument_(argument), rows_(rows) {
    FieldTableInfo info{field_enum, argument, {}};
    for (const Row &r : rows_) {
      all_ |= r.bit;
      info.rows.push_back({r.bit, r.members, nullptr});
    }
    register_field_table(std::move(info));
  }

  uint64_t all() const { return all_; }

  // Throws Error(ZRT_ERR_INVALID_ARGUMENT) for bits this library does not know (a header
  // newer than the library), so a caller never reads a field nobody wrote. Call it before
  // any collective work, so a bad mask fails on the caller's rank before the others wait.
  void check(const Report &report) const { check_field_mask(report.field_mask, all_, argument_); }

  // Writes the fields report.field_mask names and leaves the others untouched.
  void fill(const Source &source, Report &report) const {
    check(report);
    for (const Row &r : rows_)
      if (report.field_mask & r.bit) r.fill(source, report);
  }

 private:
  const char *argument_;
  std::vector<Row> rows_;
  uint64_t all_ = 0;
};

}  // namespace zrt
