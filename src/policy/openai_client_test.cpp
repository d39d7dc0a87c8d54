// openai_client_test.cpp — the OpenAI-compatible client against a fake server on loopback:
// request shape and auth, reasoning in both forms, retries on 5xx/429/dropped connections,
// timeouts, refusals and malformed replies.
#include "policy/openai_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "core/json.h"
#include "fake_http_server.h"

namespace kevin::policy {
namespace {
using kevin::testing::FakeHttpServer;
using kevin::testing::FakeReply;
using namespace std::chrono_literals;

std::string reply_json(const std::string& content, const std::string& reasoning = "",
                       const std::string& finish = "stop") {
  Json message = {{"role", "assistant"}, {"content", content}};
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  return dump_json(
      Json{{"choices", {{{"index", 0}, {"message", message}, {"finish_reason", finish}}}},
           {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 34}}}});
}

OpenAIConfig config_for(const FakeHttpServer& server) {
  OpenAIConfig c;
  c.base_url = server.base_url() + "/v1/";
  c.model = "test-model";
  c.api_key_env = "KEVIN_TEST_API_KEY";
  c.backoff = 10ms;
  c.max_retries = 3;
  c.timeout = 2000ms;
  return c;
}

TEST(OpenAIClient, SendsChatRequestAndParsesReply) {
  ::setenv("KEVIN_TEST_API_KEY", "secret-key", 1);
  FakeHttpServer server({{200, reply_json("```cuda\nx\n```", "thinking hard")}});
  OpenAIClient client(config_for(server));
  GenerationParams params;
  params.max_tokens = 100;
  params.stop = {"</answer>"};
  auto g = client.generate({{"system", "sys"}, {"user", "hello"}}, params);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->content, "```cuda\nx\n```");
  EXPECT_EQ(g->reasoning, "thinking hard");
  EXPECT_EQ(g->prompt_tokens, 12);
  EXPECT_EQ(g->completion_tokens, 34);
  EXPECT_FALSE(g->truncated());
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_NE(reqs[0].headers.find("Bearer secret-key"), std::string::npos);
  auto body = parse_json(reqs[0].body);
  ASSERT_TRUE(body.is_ok());
  EXPECT_EQ((*body)["model"], "test-model");
  EXPECT_EQ((*body)["messages"][1]["content"], "hello");
  EXPECT_DOUBLE_EQ((*body)["temperature"].get<double>(), 0.9);
  EXPECT_EQ((*body)["max_tokens"], 100);
  EXPECT_EQ((*body)["stop"][0], "</answer>");
  ::unsetenv("KEVIN_TEST_API_KEY");
}

TEST(OpenAIClient, InlineThinkAndLengthFinish) {
  FakeHttpServer server(
      {{200, reply_json("<think>inline reasoning</think>\nanswer", "", "length")}});
  OpenAIClient client(config_for(server));
  auto g = client.generate({{"user", "q"}}, {});
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->reasoning, "inline reasoning");
  EXPECT_EQ(g->content, "\nanswer");
  EXPECT_TRUE(g->truncated());
}

TEST(OpenAIClient, RetriesServerErrorsRateLimitsAndDroppedConnections) {
  FakeHttpServer server(
      {{503, "overloaded"}, {429, "slow down"}, {200, "", 0, true}, {200, reply_json("ok")}});
  OpenAIClient client(config_for(server));
  auto g = client.generate({{"user", "q"}}, {});
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->content, "ok");
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(OpenAIClient, GivesUpAfterRetriesWithUnavailable) {
  FakeHttpServer server({{500, "broken"}});
  OpenAIClient client(config_for(server));
  auto g = client.generate({{"user", "q"}}, {});
  EXPECT_EQ(g.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(g.status().message().find("HTTP 500"), std::string::npos);
  EXPECT_EQ(server.requests().size(), 4u) << "1 attempt + 3 retries";
}

TEST(OpenAIClient, ClientErrorsAreNotRetried) {
  FakeHttpServer server({{400, "{\"error\": \"bad model\"}"}});
  OpenAIClient client(config_for(server));
  auto g = client.generate({{"user", "q"}}, {});
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("bad model"), std::string::npos);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(OpenAIClient, TimeoutsAreRetriedThenReported) {
  FakeHttpServer server({{200, reply_json("late"), 1500}});
  OpenAIConfig c = config_for(server);
  c.timeout = 200ms;
  c.max_retries = 1;
  OpenAIClient client(c);
  auto g = client.generate({{"user", "q"}}, {});
  EXPECT_EQ(g.status().code(), StatusCode::kDeadlineExceeded) << g.status().to_string();
}

TEST(OpenAIClient, ACancelledGenerationStopsWithoutWaitingForTheServer) {
  FakeHttpServer server({{200, reply_json("late"), 1500}});
  OpenAIConfig c = config_for(server);
  c.timeout = 10000ms;
  OpenAIClient client(c);
  std::atomic<bool> cancel{false};
  GenerationParams params;
  params.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto g = client.generate({{"user", "q"}}, params);
  stopper.join();
  EXPECT_EQ(g.status().code(), StatusCode::kCancelled) << g.status().to_string();
  EXPECT_NE(g.status().message().find("generation cancelled"), std::string::npos)
      << g.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1400ms)
      << "the 1.5 s reply must not be waited for";
  // Already cancelled: no request at all.
  const size_t sent = server.requests().size();
  auto again = client.generate({{"user", "q"}}, params);
  EXPECT_EQ(again.status().code(), StatusCode::kCancelled);
  EXPECT_NE(again.status().message().find("generation cancelled"), std::string::npos)
      << again.status().to_string();
  EXPECT_EQ(server.requests().size(), sent);
}

TEST(OpenAIClient, UnreachableServerIsUnavailable) {
  OpenAIConfig c;
  c.base_url = "http://127.0.0.1:9/v1";  // discard port: nothing listens
  c.model = "m";
  c.max_retries = 1;
  c.backoff = 10ms;
  OpenAIClient client(c);
  auto g = client.generate({{"user", "q"}}, {});
  EXPECT_EQ(g.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(g.status().message().find("gave up after 2 attempts"), std::string::npos)
      << g.status().to_string();
}

TEST(OpenAIClient, MalformedRepliesAreErrors) {
  const auto expect_refused = [](const std::string& body, const std::string& why) {
    auto g = OpenAIClient::parse_reply(body);
    ASSERT_FALSE(g.is_ok()) << body;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << body;
    EXPECT_NE(g.status().message().find(why), std::string::npos) << g.status().to_string();
  };
  expect_refused("not json", "the server's reply is not JSON: not json");
  expect_refused("{}", "the server's reply has no choices: {}");
  expect_refused("{\"choices\": []}", "the server's reply has no choices");
  expect_refused("{\"choices\": [1]}", "the server's reply has no choices");
  expect_refused("{\"choices\": [{\"message\": 1}]}", "the server's reply has a malformed message");
  auto null_content = OpenAIClient::parse_reply(
      "{\"choices\": [{\"message\": {\"content\": null, \"reasoning\": \"r\"}}]}");
  ASSERT_TRUE(null_content.is_ok());
  EXPECT_EQ(null_content->content, "");
  EXPECT_EQ(null_content->reasoning, "r");
  FakeHttpServer server({{200, "<html>proxy error</html>"}});
  OpenAIClient client(config_for(server));
  auto html = client.generate({{"user", "q"}}, {});
  EXPECT_EQ(html.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(html.status().message().find("not JSON: <html>proxy error</html>"), std::string::npos)
      << html.status().to_string();
}

}  // namespace
}  // namespace kevin::policy
