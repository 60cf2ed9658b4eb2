#include <gtest/gtest.h>

#include "comm/start_order.hpp"

using namespace zrt;

TEST(StartOrder, TurnsFollowTicketsAndSkipsDoNotBlock) {
  StartOrder order;
  uint64_t a = order.take(), b = order.take(), c = order.take(), d = order.take();
  EXPECT_TRUE(order.is_turn(a));
  EXPECT_FALSE(order.is_turn(b));
  order.skip(c);  // c will never start: d must not wait for it
  order.started();
  EXPECT_TRUE(order.is_turn(b));
  order.started();
  EXPECT_FALSE(order.is_turn(c));
  EXPECT_TRUE(order.is_turn(d));
  order.skip(d);
  EXPECT_TRUE(order.is_turn(order.take()));
}
