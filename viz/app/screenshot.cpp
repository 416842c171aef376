// screenshot.cpp — a framebuffer object, glReadPixels, stb_image_write (see screenshot.h).
#include "viz/app/screenshot.h"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>

#include <filesystem>

#include "core/check.h"

#include "stb_image_write.h"  // the functions are in Debian's libstb

namespace ss::viz {

namespace {

// Framebuffer objects are OpenGL 3.0; libGL exports only 1.x, so these come from
// the context (glfwGetProcAddress), as ImGui's OpenGL3 backend does for its own.
constexpr unsigned kFramebuffer = 0x8D40, kRenderbuffer = 0x8D41, kColorAttachment0 = 0x8CE0,
                   kFramebufferComplete = 0x8CD5, kRGBA8 = 0x8058;
struct Fbo {
    void (*GenFramebuffers)(int, unsigned*);
    void (*BindFramebuffer)(unsigned, unsigned);
    void (*GenRenderbuffers)(int, unsigned*);
    void (*BindRenderbuffer)(unsigned, unsigned);
    void (*RenderbufferStorage)(unsigned, unsigned, int, int);
    void (*FramebufferRenderbuffer)(unsigned, unsigned, unsigned, unsigned);
    unsigned (*CheckFramebufferStatus)(unsigned);
    void (*DeleteFramebuffers)(int, const unsigned*);
    void (*DeleteRenderbuffers)(int, const unsigned*);
};

const Fbo& fbo_api() {
    static Fbo f = [] {
        Fbo a{};
        auto get = [](const char* name) {
            GLFWglproc p = glfwGetProcAddress(name);
            SS_CHECK(p != nullptr, "OpenGL " << name << " is missing; screenshots need OpenGL 3.0 framebuffers");
            return p;
        };
        a.GenFramebuffers = reinterpret_cast<decltype(a.GenFramebuffers)>(get("glGenFramebuffers"));
        a.BindFramebuffer = reinterpret_cast<decltype(a.BindFramebuffer)>(get("glBindFramebuffer"));
        a.GenRenderbuffers = reinterpret_cast<decltype(a.GenRenderbuffers)>(get("glGenRenderbuffers"));
        a.BindRenderbuffer = reinterpret_cast<decltype(a.BindRenderbuffer)>(get("glBindRenderbuffer"));
        a.RenderbufferStorage = reinterpret_cast<decltype(a.RenderbufferStorage)>(get("glRenderbufferStorage"));
        a.FramebufferRenderbuffer =
            reinterpret_cast<decltype(a.FramebufferRenderbuffer)>(get("glFramebufferRenderbuffer"));
        a.CheckFramebufferStatus =
            reinterpret_cast<decltype(a.CheckFramebufferStatus)>(get("glCheckFramebufferStatus"));
        a.DeleteFramebuffers = reinterpret_cast<decltype(a.DeleteFramebuffers)>(get("glDeleteFramebuffers"));
        a.DeleteRenderbuffers = reinterpret_cast<decltype(a.DeleteRenderbuffers)>(get("glDeleteRenderbuffers"));
        return a;
    }();
    return f;
}

}  // namespace

Offscreen::Offscreen(int width, int height) : w_(width), h_(height) {
    const Fbo& f = fbo_api();
    f.GenFramebuffers(1, &fbo_);
    f.BindFramebuffer(kFramebuffer, fbo_);
    f.GenRenderbuffers(1, &rbo_);
    f.BindRenderbuffer(kRenderbuffer, rbo_);
    f.RenderbufferStorage(kRenderbuffer, kRGBA8, w_, h_);
    f.FramebufferRenderbuffer(kFramebuffer, kColorAttachment0, kRenderbuffer, rbo_);
    SS_CHECK(f.CheckFramebufferStatus(kFramebuffer) == kFramebufferComplete,
             "cannot make a " << w_ << "x" << h_ << " offscreen framebuffer; try a smaller --size");
}

Offscreen::~Offscreen() {
    const Fbo& f = fbo_api();
    f.BindFramebuffer(kFramebuffer, 0);
    f.DeleteRenderbuffers(1, &rbo_);
    f.DeleteFramebuffers(1, &fbo_);
}

void Offscreen::bind() {
    fbo_api().BindFramebuffer(kFramebuffer, fbo_);
    glViewport(0, 0, w_, h_);
}

std::vector<unsigned char> Offscreen::read() const {
    std::vector<unsigned char> px(size_t(w_) * size_t(h_) * 4), flipped(px.size());
    fbo_api().BindFramebuffer(kFramebuffer, fbo_);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, w_, h_, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    const size_t row = size_t(w_) * 4;
    for (int y = 0; y < h_; ++y)
        std::copy(px.begin() + long(size_t(h_ - 1 - y) * row), px.begin() + long(size_t(h_ - y) * row),
                  flipped.begin() + long(size_t(y) * row));
    for (size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;  // opaque
    return flipped;
}

void write_png(const std::string& path, int width, int height, const std::vector<unsigned char>& rgba) {
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    const std::string tmp = path + ".tmp";
    SS_CHECK(stbi_write_png(tmp.c_str(), width, height, 4, rgba.data(), width * 4) != 0,
             "cannot write the screenshot " << path);
    std::filesystem::rename(tmp, path);
}

}  // namespace ss::viz
