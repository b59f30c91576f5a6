/* protocol.h's func ids for the C program (protocol.h is C++). */
#ifndef CONSUMER_PROTOCOL_C_H
#define CONSUMER_PROTOCOL_C_H
#define CONSUMER_SQUARE 0
#define CONSUMER_AXPY 1
#endif
