// pixel_texture.cpp — create, resize and upload a CPU-painted texture (see pixel_texture.h).
#include "viz/app/pixel_texture.h"

#include <GL/gl.h>

namespace ss::viz {

PixelTexture::~PixelTexture() { release(); }

void PixelTexture::release() {
    if (tex_) glDeleteTextures(1, &tex_);
    tex_ = 0;
    tex_w_ = tex_h_ = 0;
}

void PixelTexture::resize(int width, int height) {
    w_ = width > 0 ? width : 1;
    h_ = height > 0 ? height : 1;
    pixels_.resize(size_t(w_) * size_t(h_));
    if (!tex_) {
        GLint last_texture = 0;
        glGetIntegerv(GL_TEXTURE_BINDING_2D, &last_texture);
        glGenTextures(1, &tex_);
        glBindTexture(GL_TEXTURE_2D, tex_);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        glBindTexture(GL_TEXTURE_2D, GLuint(last_texture));
    }
}

void PixelTexture::upload() {
    GLint last_texture = 0;
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &last_texture);
    if (!tex_) resize(w_, h_);
    glBindTexture(GL_TEXTURE_2D, tex_);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    if (tex_w_ != w_ || tex_h_ != h_) {
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, w_, h_, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
        tex_w_ = w_;
        tex_h_ = h_;
    } else {
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w_, h_, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
    }
    glBindTexture(GL_TEXTURE_2D, GLuint(last_texture));
}

}  // namespace ss::viz
