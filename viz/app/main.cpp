// main.cpp — shardscope-viz: open a trace and look at what every rank did.
//
//   shardscope-viz out/demo-zero3.json                       the window
//   shardscope-viz --live                                    run the engine here (Live run tab)
//   shardscope-viz --live-run --screenshot out.png           headless: run, then picture the run's trace
//                                                            (a failed run, or one past --live-timeout: exit 1)
//   shardscope-viz TRACE --screenshot out.png [--panel NAME|all] [--size 1600x1000]
//                                                            headless: PNG, no interaction
//   shardscope-viz TRACE --bench-frames 120                  median frame time (docs/performance.md)
//
// The loop is ocornut/imgui's example_glfw_opengl3 main.cpp, numbered the same
// way: 1. poll events, 2. new frame, 3. panels (viz/app/panels.cpp), 4. render.
// The trace is loaded before any window opens, so a bad file is reported on
// stderr (with --screenshot) and in the window, never as a crash.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "core/check.h"
#include "imgui.h"
#include "viz/app/panels.h"
#include "viz/app/screenshot.h"

namespace {

using namespace ss::viz;

struct Flags {
    std::string trace;
    bool live = false;
    std::string screenshot;
    std::string panel = "overview";
    std::string size = "1600x1000";
    uint64_t max_events = LoadLimits{}.max_events;
    int bench_frames = 0;
    std::string view = "step";
    int exercise = 0;
    bool live_run = false;
    std::string live_out = "out";
    double live_timeout = 120;  // headless --live-run: seconds before the run is stopped and the exit is 1
    float font_px = 16.0f;
};

void glfw_error(int code, const char* what) { std::fprintf(stderr, "shardscope-viz: GLFW error %d: %s\n", code, what); }

// DejaVu Sans reads better than ImGui's 13-pixel bitmap font in pictures; use it when it is installed.
void load_font(float px) {
    ImGuiIO& io = ImGui::GetIO();
    for (const char* path : {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                             "/usr/share/fonts/TTF/DejaVuSans.ttf"}) {
        if (std::filesystem::exists(path) && io.Fonts->AddFontFromFileTTF(path, px)) return;
    }
    io.Fonts->AddFontDefault();
}

void style() {
    ImGui::StyleColorsDark();
    ImGuiStyle& st = ImGui::GetStyle();
    st.WindowPadding = ImVec2(8, 6);
    st.ItemSpacing = ImVec2(8, 4);
    st.FrameRounding = 2;
    st.ChildRounding = 3;
    // The window and the panels' tiles draw no background of their own: glClear paints it.
    // A software rasterizer (llvmpipe, under Xvfb) pays per pixel drawn, and each full-window
    // layer costs ~8 ms a frame at 1600x1000; these two layers were half of a frame.
    st.Colors[ImGuiCol_WindowBg] = ImVec4(0, 0, 0, 0);
    st.Colors[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 0);
}

// --exercise: a scripted mouse for frame @p i of a W x H window. It wanders over everything
// (hover tooltips, picking), clicks now and then (selection, cursor, tabs, buttons) and turns
// the wheel (zoom), so a headless run goes through the interactive code paths.
void scripted_mouse(int i, float W, float H) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = ImVec2(W * (0.5f + 0.49f * std::sin(float(i) * 0.137f)),
                         H * (0.5f + 0.49f * std::sin(float(i) * 0.091f + 1.0f)));
    io.MouseDown[0] = i % 23 < 2;
    io.MouseWheel = i % 31 == 0 ? 1.0f : (i % 37 == 0 ? -1.0f : 0.0f);
    io.KeyShift = i % 97 < 10;
}

// One frame: 2. new frame, 3. panels, 4. render (1. polling is the caller's: it differs
// between the window and headless runs). With @p target, draws into it at its size;
// @p scripted >= 0 moves the mouse as scripted_mouse() says.
void frame(ViewerState& s, GLFWwindow* win, Offscreen* target, int scripted = -1) {
    // 2. new frame
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGuiIO& io = ImGui::GetIO();
    if (target) {
        io.DisplaySize = ImVec2(float(target->width()), float(target->height()));
        io.DisplayFramebufferScale = ImVec2(1, 1);
    }
    if (scripted >= 0) scripted_mouse(scripted, io.DisplaySize.x, io.DisplaySize.y);
    ImGui::NewFrame();

    // 3. panels
    std::string live_trace, live_error;
    if (live_poll(s.live, live_trace, live_error)) {
        if (live_error.empty())
            open_trace(s, live_trace);
        else
            s.error = "the live run failed: " + live_error;
    }
    draw_window(s);

    // 4. render
    ImGui::Render();
    if (target) {
        target->bind();
    } else {
        int w, h;
        glfwGetFramebufferSize(win, &w, &h);
        glViewport(0, 0, w, h);
    }
    glClearColor(0.10f, 0.11f, 0.13f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

bool parse_panel(const std::string& name, std::vector<Panel>& out) {
    for (int i = 0; i < int(Panel::count); ++i) {
        if (name == "all" || name == panel_name(Panel(i))) out.push_back(Panel(i));
    }
    return !out.empty();
}

// out.png + timeline -> out-timeline.png
std::string panel_png(const std::string& path, Panel p, bool several) {
    if (!several || p == Panel::overview) return path;
    std::filesystem::path f(path);
    return (f.parent_path() / (f.stem().string() + "-" + panel_name(p) + f.extension().string())).string();
}

int run(const Flags& f) {
    int W = 0, H = 0;
    SS_CHECK(std::sscanf(f.size.c_str(), "%dx%d", &W, &H) == 2 && W >= 320 && H >= 240 && W <= 8192 && H <= 8192,
             "--size " << f.size << ": expected WIDTHxHEIGHT, e.g. 1600x1000 (320x240 to 8192x8192)");
    std::vector<Panel> panels;
    SS_CHECK(parse_panel(f.panel, panels),
             "--panel " << f.panel << ": choose overview, timeline, memory, grid, comm, pipeline, gbs, live or all");
    SS_CHECK(f.live_timeout >= 0, "--live-timeout " << f.live_timeout << ": seconds, 0 or more");
    const bool headless = !f.screenshot.empty() || f.bench_frames > 0 || f.exercise > 0;

    // 0. the trace, before any window
    ViewerState s;
    s.limits.max_events = f.max_events;
    if (!f.trace.empty()) {
        open_trace(s, f.trace);
        if (!s.error.empty()) std::fprintf(stderr, "shardscope-viz: error: %s\n", s.error.c_str());
        if (s.vm && f.view == "all") {
            s.timeline.view.fit(s.vm->timeline.t_min, s.vm->timeline.t_max);
            s.timeline.view_set = true;
        }
    }
    s.panel = f.live && f.screenshot.empty() ? Panel::live : panels.front();
    s.screenshot = headless;
    s.live.out_dir = f.live_out;

    glfwSetErrorCallback(glfw_error);
    if (!glfwInit()) {
        std::fprintf(stderr, "shardscope-viz: error: cannot start GLFW (no X display? DISPLAY=%s). "
                     "For pictures without a display: xvfb-run -a shardscope-viz TRACE --screenshot out.png\n",
                     std::getenv("DISPLAY") ? std::getenv("DISPLAY") : "(unset)");
        return 1;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
    if (headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    GLFWwindow* win = glfwCreateWindow(headless ? 64 : W, headless ? 64 : H, "ShardScope", nullptr, nullptr);
    if (!win) {
        std::fprintf(stderr, "shardscope-viz: error: cannot open an OpenGL 3.0 window (see the GLFW error above)\n");
        glfwTerminate();
        return 1;
    }
    glfwMakeContextCurrent(win);
    glfwSwapInterval(headless ? 0 : 1);

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;  // no imgui.ini left in the working directory
    style();
    load_font(f.font_px);
    ImGui_ImplGlfw_InitForOpenGL(win, true);
    ImGui_ImplOpenGL3_Init("#version 130");

    int code = s.error.empty() ? 0 : 1;
    try {
        if (f.live_run) live_start(s.live);  // as if Run were pressed on the Live run tab
        if (headless) {
            Offscreen target(W, H);
            if (f.live_run) {  // the pictures are of the run's trace: draw until frame() has shown it
                const auto t0 = std::chrono::steady_clock::now();
                const auto limit = std::chrono::duration<double>(f.live_timeout);
                while (live_active(s.live) && std::chrono::steady_clock::now() - t0 < limit) {
                    glfwPollEvents();
                    frame(s, win, &target);
                    glfwWaitEventsTimeout(0.05);
                }
                // Past the limit: no pictures of a trace that is not there, and exit code 1
                // (the catch below). ~LiveRun waits for the stopped run: a step at most.
                if (live_active(s.live)) {
                    live_stop(s.live);
                    SS_FAIL("the live run did not end within --live-timeout " << f.live_timeout
                                                                              << " s; it is stopped and no picture "
                                                                              << "is taken (raise --live-timeout)");
                }
                if (!s.error.empty()) {
                    std::fprintf(stderr, "shardscope-viz: error: %s\n", s.error.c_str());
                    code = 1;
                }
            }
            if (f.exercise > 0) {  // every tab in turn, with the scripted mouse
                s.screenshot = false;
                for (int i = 0; i < f.exercise; ++i) {
                    if (i % std::max(1, f.exercise / int(Panel::count)) == 0) {
                        s.panel = Panel((i / std::max(1, f.exercise / int(Panel::count))) % int(Panel::count));
                        s.force_tab = true;
                    }
                    glfwPollEvents();
                    frame(s, win, &target, i);
                }
                std::printf("exercise: %d frames with a scripted mouse over every tab\n", f.exercise);
            }
            if (!f.screenshot.empty()) {
                for (Panel p : panels) {
                    s.panel = p;
                    s.force_tab = true;
                    for (int i = 0; i < 4; ++i) frame(s, win, &target);  // layout settles in a few frames
                    const std::string out = panel_png(f.screenshot, p, panels.size() > 1);
                    write_png(out, W, H, target.read());
                    std::printf("screenshot: %s (%s, %dx%d)\n", out.c_str(), panel_name(p), W, H);
                }
            }
            if (f.bench_frames > 0) {
                std::vector<double> ms;
                for (int i = 0; i < f.bench_frames + 5; ++i) {
                    const auto t0 = std::chrono::steady_clock::now();
                    glfwPollEvents();
                    frame(s, win, &target);
                    glFinish();  // count the rasterizer's work, not only the submission
                    const double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                    if (i >= 5) ms.push_back(dt);  // the first frames build the font atlas and caches
                }
                std::sort(ms.begin(), ms.end());
                const double median = ms[ms.size() / 2], p90 = ms[ms.size() * 9 / 10];
                std::printf("bench: %s, %s events, %d ranks, panel %s, %dx%d, view %s\n", f.trace.c_str(),
                            s.vm ? std::to_string(s.vm->trace.events.size()).c_str() : "0",
                            s.vm ? s.vm->timeline.world : 0, panel_name(panels.front()), W, H, f.view.c_str());
                const ImDrawData* dd = ImGui::GetDrawData();
                int calls = 0;
                for (int i = 0; i < dd->CmdListsCount; ++i) calls += dd->CmdLists[i]->CmdBuffer.Size;
                std::printf("bench: last frame: %d vertices, %d draw calls\n", dd->TotalVtxCount, calls);
                std::printf("bench: load %.2f s; frame median %.1f ms (%.0f fps), p90 %.1f ms over %d frames (%s)\n",
                            s.load_seconds, median, 1000.0 / median, p90, f.bench_frames,
                            reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
            }
        } else {
            // The window: 1. poll, 2-4. frame, swap. Idle windows sleep until an event (or 0.1 s
            // while a live run is printing).
            while (!glfwWindowShouldClose(win)) {
                const bool busy = live_active(s.live);
                glfwWaitEventsTimeout(busy ? 0.1 : 0.5);  // 1. poll events
                frame(s, win, nullptr);
                glfwSwapBuffers(win);
            }
        }
    } catch (const ss::Error& e) {
        std::fprintf(stderr, "shardscope-viz: error: %s\n", e.what());
        code = 1;
    }
    s.lane_texture.release();
    s.memory_texture.release();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(win);
    glfwTerminate();
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"shardscope-viz: per-rank memory, the collective timeline, the rank grid and the GBS calculator"};
    Flags f;
    app.add_option("trace", f.trace, "a trace written by `shardscope train --trace FILE`");
    app.add_flag("--live", f.live, "open on the Live run tab: run the engine here and watch its trace");
    app.add_option("--screenshot", f.screenshot, "render without interaction and save a PNG (needs an X server: "
                                                 "xvfb-run -a)");
    app.add_option("--panel", f.panel, "overview, timeline, memory, grid, comm, pipeline, gbs, live, or all "
                                       "(one PNG each: out.png, out-timeline.png, ...)");
    app.add_option("--size", f.size, "picture size WIDTHxHEIGHT")->capture_default_str();
    app.add_option("--max-events", f.max_events, "refuse traces with more events than this")->capture_default_str();
    app.add_option("--bench-frames", f.bench_frames, "render N frames headless and print the median frame time");
    app.add_option("--view", f.view, "the timeline's first window: step (step 2) or all")
        ->check(CLI::IsMember({"step", "all"}))
        ->capture_default_str();
    app.add_option("--font-px", f.font_px, "font size in pixels")->capture_default_str();
    app.add_option("--exercise", f.exercise, "headless: N frames with a scripted mouse (hover, click, wheel) "
                                             "over every tab, a smoke test of the interactive paths");
    app.add_flag("--live-run", f.live_run, "press Run at start (the Live run tab's layout: tiny, 8 ranks, ZeRO-3); "
                                           "with --screenshot, the pictures are taken when the run has ended");
    app.add_option("--live-out", f.live_out, "folder for the live runs' traces")->capture_default_str();
    app.add_option("--live-timeout", f.live_timeout, "headless --live-run: seconds to wait for the run; past them "
                                                     "it is stopped, no picture is taken and the exit code is 1")
        ->capture_default_str();
    try {
        app.parse(argc, argv);
        return run(f);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const ss::Error& e) {
        std::fprintf(stderr, "shardscope-viz: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shardscope-viz: internal error: %s\n", e.what());
        return 1;
    }
}
