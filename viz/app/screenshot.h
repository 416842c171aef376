// screenshot.h — render the window into an offscreen framebuffer and save it as a PNG.
//
// Headless pictures (`--screenshot`) must not depend on the X server's screen
// size or colour depth (xvfb-run's default screen is 640x480 at 8 bits), so
// the frames are drawn into a framebuffer object of exactly --size pixels,
// read back with glReadPixels, flipped (OpenGL's rows start at the bottom)
// and written with stb_image_write (Debian's libstb-dev).
#pragma once

#include <string>
#include <vector>

namespace ss::viz {

/// An offscreen RGBA8 render target of a fixed size (a framebuffer object).
class Offscreen {
public:
    /// Creates the target; needs a current OpenGL 3 context. Throws ss::Error if it cannot.
    Offscreen(int width, int height);
    ~Offscreen();
    Offscreen(const Offscreen&) = delete;
    Offscreen& operator=(const Offscreen&) = delete;

    /// Draw into this target from now on (and set the viewport).
    void bind();
    /// The pixels drawn, top row first, RGBA.
    std::vector<unsigned char> read() const;
    int width() const { return w_; }
    int height() const { return h_; }

private:
    int w_, h_;
    unsigned fbo_ = 0, rbo_ = 0;
};

/// Writes @p rgba (top row first) as a PNG. Throws ss::Error naming the file if it cannot.
void write_png(const std::string& path, int width, int height, const std::vector<unsigned char>& rgba);

}  // namespace ss::viz
