#include <gtest/gtest.h>

#include <functional>

#include "runtime/handle_table.hpp"

using namespace zrt;

namespace {
struct Thing {
  int value;
};

zrt_status_t status_of(const std::function<void()> &f, std::string *msg = nullptr) {
  try {
    f();
  } catch (const Error &e) {
    if (msg) *msg = e.what();
    return e.status();
  }
  return ZRT_SUCCESS;
}
}  // namespace

TEST(HandleTable, InsertGetRemove) {
  HandleTable<Thing> t("thing");
  uintptr_t a = t.insert(std::make_unique<Thing>(Thing{1}));
  uintptr_t b = t.insert(std::make_unique<Thing>(Thing{2}));
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.get(a, "a").value, 1);
  EXPECT_EQ(t.get(b, "b").value, 2);
  EXPECT_EQ(t.live(), 2u);
  EXPECT_EQ(t.remove(a, "a")->value, 1);
  EXPECT_EQ(t.live(), 1u);
}

TEST(HandleTable, StaleHandleIsRejectedEvenWhenTheSlotIsReused) {
  HandleTable<Thing> t("thing");
  uintptr_t a = t.insert(std::make_unique<Thing>(Thing{1}));
  t.remove(a, "a");
  uintptr_t c = t.insert(std::make_unique<Thing>(Thing{3}));  // same slot, new generation
  EXPECT_NE(a, c);
  std::string msg;
  EXPECT_EQ(status_of([&] { t.get(a, "a"); }, &msg), ZRT_ERR_INVALID_HANDLE);
  EXPECT_NE(msg.find("stale"), std::string::npos) << msg;
  EXPECT_EQ(status_of([&] { t.remove(a, "a"); }), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(t.get(c, "c").value, 3);
}

TEST(HandleTable, NullAndForeignHandles) {
  HandleTable<Thing> t("thing");
  std::string msg;
  EXPECT_EQ(status_of([&] { t.get(0, "comm"); }, &msg), ZRT_ERR_INVALID_HANDLE);
  EXPECT_NE(msg.find("comm is a NULL thing handle"), std::string::npos) << msg;
  EXPECT_EQ(status_of([&] { t.get(0xdeadbeef, "x"); }), ZRT_ERR_INVALID_HANDLE);
  EXPECT_EQ(status_of([&] { t.get(~uintptr_t{0}, "x"); }), ZRT_ERR_INVALID_HANDLE);
}
