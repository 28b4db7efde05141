"""tf.image of TF 1.x where TensorFlow 2 changed what it returns: per_image_standardization."""

import tensorflow as tf


def per_image_standardization(image):
    """TF 1.15's tf.image.per_image_standardization: the image standardized in its own
    dtype. An image of another dtype than float16 / float32 is scaled to float32 first
    (convert_image_dtype: uint8 to [0, 1]) and the result converted back, saturated;
    TensorFlow 2's casts to float32 unscaled and returns float32 (facenet's tf.cond of it
    and a float32 branch was refused by TF 1.15 for that uint8)."""
    with tf.name_scope("per_image_standardization"):
        image = tf.convert_to_tensor(image, name="image")
        rank = image.shape.rank
        if rank is not None and rank < 3:
            raise ValueError(f"'image' (shape {image.shape}) must be at least three-dimensional.")
        original = image.dtype
        if original not in (tf.float16, tf.float32):
            image = tf.image.convert_image_dtype(image, tf.float32)
        num_pixels = tf.reduce_prod(tf.shape(image)[-3:])
        mean = tf.reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        # The deviation is kept at least 1/sqrt(N) away from 0 (a uniform image).
        stddev = tf.math.reduce_std(image, axis=[-1, -2, -3], keepdims=True)
        adjusted = tf.maximum(stddev, tf.math.rsqrt(tf.cast(num_pixels, image.dtype)))
        image = (image - mean) / adjusted
        return tf.image.convert_image_dtype(image, original, saturate=True)


def image_names():
    """What tf.image of the TF 1.x module takes from here."""
    return {"per_image_standardization": per_image_standardization}
