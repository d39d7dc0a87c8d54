// openai_api_test.cpp — `kevin generate --serve`'s front end: the chat-completion shape, every
// refused field named before the policy is called, policy errors as statuses, and (over loopback)
// kevin's own OpenAI client talking to it with a bearer token and requests sampled at once.
#include "server/openai_api.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "core/mutex.h"
#include "server/server_test_support.h"

#if defined(KEVIN_HAVE_CURL)
#include "policy/openai_client.h"
#endif

namespace kevin::server {
namespace {

// Answers "echo: <last message>" with a reasoning block, and records what it was asked. With
// `rendezvous` > 1, each call waits (up to 10 s) until that many calls are in flight at once.
class RecordingPolicy final : public policy::Policy {
 public:
  Result<policy::Generation> generate(const std::vector<ChatMessage>& messages,
                                      const policy::GenerationParams& params) override {
    {
      MutexLock lock(mu_);
      ++calls_;
      last_messages_ = messages;
      last_params_ = params;
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
      released_ = released_ || in_flight_ >= rendezvous_;
      arrived_.notify_all();
      const auto deadline = CondVar::Clock::now() + std::chrono::seconds(10);
      while (!released_ && arrived_.wait_until(mu_, deadline)) {
      }
    }
    policy::Generation g;
    g.content = "echo: " + messages.back().content;
    g.reasoning = "thought";
    g.finish_reason = params.max_tokens < 5 ? "length" : "stop";
    g.prompt_tokens = 7;
    g.completion_tokens = 3;
    MutexLock lock(mu_);
    --in_flight_;
    if (!fail_.is_ok()) return fail_;
    return g;
  }
  std::string name() const override { return "recording"; }

  void fail_with(Status s) {
    MutexLock lock(mu_);
    fail_ = std::move(s);
  }
  void set_rendezvous(int n) {
    MutexLock lock(mu_);
    rendezvous_ = n;
  }
  int calls() {
    MutexLock lock(mu_);
    return calls_;
  }
  int max_in_flight() {
    MutexLock lock(mu_);
    return max_in_flight_;
  }
  std::vector<ChatMessage> last_messages() {
    MutexLock lock(mu_);
    return last_messages_;
  }
  policy::GenerationParams last_params() {
    MutexLock lock(mu_);
    return last_params_;
  }

 private:
  Mutex mu_;
  CondVar arrived_;
  int calls_ GUARDED_BY(mu_) = 0;
  int in_flight_ GUARDED_BY(mu_) = 0;
  int max_in_flight_ GUARDED_BY(mu_) = 0;
  int rendezvous_ GUARDED_BY(mu_) = 1;
  bool released_ GUARDED_BY(mu_) = false;  // the rendezvous was reached once
  Status fail_ GUARDED_BY(mu_);
  std::vector<ChatMessage> last_messages_ GUARDED_BY(mu_);
  policy::GenerationParams last_params_ GUARDED_BY(mu_);
};

class OpenAiRoutesTest : public ::testing::Test {
 protected:
  OpenAiRoutesTest() : routes_(&policy_, {"kevin-test", 1000, 4}) {}
  HttpReply chat(const Json& request) {
    return routes_.handle("POST", "/v1/chat/completions", dump_json(request), {});
  }
  static Json body(const HttpReply& r) { return *parse_json(r.body); }
  static Json hello() { return {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}; }

  RecordingPolicy policy_;
  OpenAiRoutes routes_;
};

TEST_F(OpenAiRoutesTest, AChatCompletionHasOpenAisShapeAndReachesThePolicy) {
  const HttpReply reply = chat(
      {{"model", "kevin-test"},
       {"messages",
        {{{"role", "developer"}, {"content", "be brief"}},
         {{"role", "user"}, {"content", "write a kernel"}},
         {{"role", "assistant"}, {"content", "here"}},
         {{"role", "user"},
          {"content",
           {{{"type", "text"}, {"text", "faster "}}, {{"type", "text"}, {"text", "please"}}}}}}},
       {"temperature", 0.2},
       {"top_p", 0.5},
       {"max_tokens", 100},
       {"stop", "```"}});
  ASSERT_EQ(reply.status, 200u) << reply.body;
  const Json r = body(reply);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], "kevin-test");
  EXPECT_EQ(r["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  ASSERT_EQ(r["choices"].size(), 1u);
  EXPECT_EQ(r["choices"][0]["index"], 0);
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "echo: faster please");
  EXPECT_EQ(r["choices"][0]["message"]["reasoning_content"], "thought");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"],
            Json({{"prompt_tokens", 7}, {"completion_tokens", 3}, {"total_tokens", 10}}));

  const auto messages = policy_.last_messages();
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].role, "system") << "a developer message is the system message";
  EXPECT_EQ(messages[2].role, "assistant");
  const policy::GenerationParams p = policy_.last_params();
  EXPECT_DOUBLE_EQ(p.temperature, 0.2);
  EXPECT_DOUBLE_EQ(p.top_p, 0.5);
  EXPECT_EQ(p.max_tokens, 100);
  EXPECT_EQ(p.stop, std::vector<std::string>{"```"});
  EXPECT_EQ(routes_.completions(), 1);
}

TEST_F(OpenAiRoutesTest, DefaultsAndTheNewerLengthFieldApply) {
  ASSERT_EQ(chat(hello()).status, 200u);
  EXPECT_EQ(policy_.last_params().max_tokens, 1000) << "the server's cap is the default";
  EXPECT_DOUBLE_EQ(policy_.last_params().temperature, policy::GenerationParams{}.temperature);
  Json request = hello();
  request["max_tokens"] = 50;
  request["max_completion_tokens"] = 3;
  const Json r = body(chat(request));
  EXPECT_EQ(policy_.last_params().max_tokens, 3);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

TEST_F(OpenAiRoutesTest, ABadRequestNamesItsFieldAndNeverReachesThePolicy) {
  struct Case {
    Json change;
    std::string param;
  };
  auto with = [](Json change) {
    Json r = hello();
    r.update(change);
    return r;
  };
  const std::vector<Case> cases = {
      {{{"messages", Json::array()}}, "messages"},
      {{{"messages", "hi"}}, "messages"},
      {{{"messages", {{{"role", "tool"}, {"content", "x"}}}}}, "messages[0].role"},
      {{{"messages", {{{"content", "x"}}}}}, "messages[0].role"},
      {{{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}},
       "messages[0].content"},
      {{{"messages", {{{"role", "user"}, {"content", 3}}}}}, "messages[0].content"},
      {{{"temperature", 2.5}}, "temperature"},
      {{{"temperature", "hot"}}, "temperature"},
      {{{"top_p", 0}}, "top_p"},
      {{{"max_tokens", 0}}, "max_tokens"},
      {{{"max_tokens", 1001}}, "max_tokens"},
      {{{"max_completion_tokens", 1e12}}, "max_completion_tokens"},
      {{{"stop", {"a", "b", "c", "d", "e"}}}, "stop"},
      {{{"stop", {""}}}, "stop"},
      {{{"n", 2}}, "n"},
      {{{"stream", true}}, "stream"},
  };
  for (const Case& c : cases) {
    const HttpReply reply = chat(with(c.change));
    EXPECT_EQ(reply.status, 400u) << c.change.dump();
    const Json e = body(reply)["error"];
    EXPECT_EQ(e["param"], c.param) << c.change.dump();
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_FALSE(e["message"].get<std::string>().empty());
    EXPECT_EQ(e["message"].get<std::string>().find(".000000"), std::string::npos) << e["message"];
  }
  const HttpReply not_json = routes_.handle("POST", "/v1/chat/completions", "{\"messages\": [", {});
  EXPECT_EQ(not_json.status, 400u);
  const HttpReply other_model = chat(with({{"model", "gpt-9"}}));
  EXPECT_EQ(other_model.status, 404u);
  EXPECT_EQ(body(other_model)["error"]["code"], "model_not_found");
  EXPECT_EQ(policy_.calls(), 0);
}

TEST_F(OpenAiRoutesTest, PolicyFailuresAreStatusesInOpenAisShape) {
  const std::vector<std::pair<Status, unsigned>> cases = {
      {invalid_argument("prompt too long"), 400u},
      {cancelled("stopping"), 503u},
      {resource_exhausted("cache full"), 503u},
      {internal_error("bug"), 500u}};
  for (const auto& [status, code] : cases) {
    policy_.fail_with(status);
    const HttpReply reply = chat(hello());
    EXPECT_EQ(reply.status, code) << status.to_string();
    EXPECT_EQ(body(reply)["error"]["message"], status.message());
  }
  EXPECT_EQ(routes_.completions(), 0);
}

TEST_F(OpenAiRoutesTest, RoutesModelsHealthAndShutdown) {
  const Json models = body(routes_.handle("GET", "/v1/models", "", {}));
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "kevin-test");
  EXPECT_EQ(body(routes_.handle("GET", "/health", "", {2, 0}))["queued"], 2);
  EXPECT_TRUE(routes_.open_path("/health"));
  EXPECT_FALSE(routes_.open_path("/v1/models"));
  EXPECT_TRUE(routes_.quick("GET", "/v1/models"));
  EXPECT_FALSE(routes_.quick("POST", "/v1/chat/completions"));
  EXPECT_TRUE(routes_.takes_body("POST", "/v1/chat/completions"));
  EXPECT_FALSE(routes_.takes_body("POST", "/v1/models"));
  EXPECT_EQ(routes_.handle("GET", "/v1/chat/completions", "", {}).status, 405u);
  EXPECT_EQ(routes_.handle("GET", "/v1/embeddings", "", {}).status, 404u);
  EXPECT_EQ(body(routes_.error(401, "no"))["error"]["type"], "authentication_error");
  const SocketOpening socket = routes_.open_socket();
  ASSERT_TRUE(std::holds_alternative<SocketReply>(socket));
  EXPECT_EQ(parse_json(std::get<SocketReply>(socket).text)->at("error")["type"], "not_found_error");
  routes_.begin_shutdown();
  EXPECT_EQ(chat(hello()).status, 503u);
  EXPECT_EQ(body(routes_.handle("GET", "/health", "", {}))["status"], "stopping");
  EXPECT_EQ(policy_.calls(), 0);
}

#if defined(KEVIN_HAVE_CURL)
// kevin's own OpenAI client against the server over loopback, as `kevin run --llm` would use it.
class OpenAiServerTest : public OpenAiRoutesTest {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.token = "s3cret";
    auto s = LoopbackServer::start(&routes_, so);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    server_ = std::move(s).value();
  }
  std::unique_ptr<policy::OpenAIClient> client(const std::string& key) {
    ::setenv("KEVIN_OPENAI_API_TEST_KEY", key.c_str(), 1);
    policy::OpenAIConfig c;
    c.base_url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/v1";
    c.model = "kevin-test";
    c.api_key_env = "KEVIN_OPENAI_API_TEST_KEY";
    c.max_retries = 0;
    return std::make_unique<policy::OpenAIClient>(c);
  }

  std::unique_ptr<LoopbackServer> server_;
};

TEST_F(OpenAiServerTest, KevinsClientGetsTheAnswerWithTheToken) {
  policy::GenerationParams params;
  params.max_tokens = 100;  // within the server's cap
  auto generation = client("s3cret")->generate({{"user", "hello"}}, params);
  ASSERT_TRUE(generation.is_ok()) << generation.status().to_string();
  EXPECT_EQ(generation->content, "echo: hello");
  EXPECT_EQ(generation->reasoning, "thought");
  EXPECT_EQ(generation->completion_tokens, 3);
  EXPECT_FALSE(client("wrong")->generate({{"user", "hello"}}, params).is_ok());
  EXPECT_EQ(policy_.calls(), 1) << "a request without the token never reaches the policy";
}

TEST_F(OpenAiServerTest, RequestsAreSampledAtOnceUpToTheWorkers) {
  policy_.set_rendezvous(4);  // each call waits until four are in flight
  auto c = client("s3cret");
  policy::GenerationParams params;
  params.max_tokens = 100;
  std::vector<std::thread> callers;
  std::vector<int> ok(4, 0);
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] {
      ok[static_cast<size_t>(i)] =
          c->generate({{"user", "request " + std::to_string(i)}}, params).is_ok() ? 1 : 0;
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
  EXPECT_EQ(policy_.max_in_flight(), 4) << "the four requests reached the policy together";
}
#endif

}  // namespace
}  // namespace kevin::server
